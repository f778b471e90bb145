"""Every case: ``broken.py`` gets exactly the rules its case file names (``check = [...]``), and
``fixed.py`` gets nothing. A new case whose broken program a rule flags names the rule in its
own file; one that no rule sees stays clean."""

from __future__ import annotations

import pytest

from samedevice.cases import load_cases
from samedevice.check import BY_CODE, RULES, check_source

CASES = load_cases()
EXPECTED = {c.slug: set(c.check_rules) for c in CASES}


def _codes(path) -> set[str]:
    return {f.code for f in check_source(path.read_text(encoding="utf-8"), str(path))}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_broken_is_flagged_by_its_rules(case):
    assert _codes(case.broken_path) == EXPECTED[case.slug]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_fixed_is_clean(case):
    assert _codes(case.fixed_path) == set()


def test_cases_name_existing_rules_of_their_own_family():
    for case in CASES:
        for code in case.check_rules:
            assert code in BY_CODE, f"{case.slug} names unknown rule {code}"
            assert BY_CODE[code].family == case.family, f"{case.slug} ({case.family}) names {code}"


def test_every_rule_comes_from_a_case():
    named = {code for c in CASES for code in c.check_rules}
    assert {r.code for r in RULES} <= named


def test_codes_are_grouped_by_family():
    for code, rule in BY_CODE.items():
        assert code == f"SD{rule.family[1:]}{code[-2:]}", code


def test_coverage_of_the_cases(capsys):
    flagged = [c.slug for c in CASES if EXPECTED[c.slug]]
    with capsys.disabled():
        print(f"\nsamedevice check flags {len(flagged)} of {len(CASES)} cases' broken.py")
    assert len(flagged) >= 0.7 * 26  # the 26 cases of issue 14: 19 flagged when it closed
