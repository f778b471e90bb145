"""Every case: ``broken.py`` gets exactly the rules that name the case in the registry, and
``fixed.py`` gets nothing. A new case whose broken program a rule flags must be named in that
rule's ``cases`` (the registry is the one list); one that no rule sees stays clean."""

from __future__ import annotations

import pytest

from samedevice.cases import load_cases
from samedevice.check import BY_CODE, RULES, check_source

CASES = load_cases()
EXPECTED = {slug: {r.code for r in RULES if slug in r.cases} for slug in {c.slug for c in CASES}}


def _codes(path) -> set[str]:
    return {f.code for f in check_source(path.read_text(encoding="utf-8"), str(path))}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_broken_is_flagged_by_its_rules(case):
    assert _codes(case.broken_path) == EXPECTED[case.slug]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_fixed_is_clean(case):
    assert _codes(case.fixed_path) == set()


def test_registry_names_only_existing_cases_of_the_rule_family():
    by_slug = {c.slug: c for c in CASES}
    for rule in RULES:
        for slug in rule.cases:
            assert slug in by_slug, f"{rule.code} names unknown case {slug}"
            assert by_slug[slug].family == rule.family, f"{rule.code} ({rule.family}) names {slug}"


def test_codes_are_grouped_by_family():
    for code, rule in BY_CODE.items():
        assert code == f"SD{rule.family[1:]}{code[-2:]}", code


def test_coverage_of_the_cases(capsys):
    flagged = [c.slug for c in CASES if EXPECTED[c.slug]]
    with capsys.disabled():
        print(f"\nsamedevice check flags {len(flagged)} of {len(CASES)} cases' broken.py")
    assert len(flagged) >= 0.7 * 26  # the 26 cases of issue 14: 19 flagged when it closed
