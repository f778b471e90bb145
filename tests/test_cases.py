"""The case registry: every case's files are complete and consistent with each other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from samedevice.cases import (
    FAMILY_IDS,
    CaseError,
    families,
    load_cases,
    parse_case,
    version_in,
)
from samedevice.testing import signature

CASES = load_cases()


def test_there_are_cases_with_unique_ids():
    assert len(CASES) >= 5
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_current_message_matches_the_documented_signature(case):
    """The message for PyTorch >= 2.8 says what the metadata says: template, op, argument."""
    message = case.error.message_for("2.13.0")
    assert message is not None, "every case records the current message"
    sig = signature(message.text)
    assert sig is not None, message.text
    assert sig.template == case.error.template
    if case.error.argument:
        assert sig.argument == case.error.argument
    if sig.op:
        assert sig.op.lstrip("_") == case.error.op.lstrip("_")
    if case.error.devices and sig.devices:
        assert tuple(sig.devices) == case.error.devices


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_each_case_links_upstream_evidence_and_has_prose(case):
    assert case.upstream.issue or case.upstream.fix or case.upstream.evidence
    for link in (*case.upstream.issue, *case.upstream.fix, *case.upstream.introduced, *case.upstream.evidence):
        assert link.url.startswith("https://")
    assert case.why and case.fix and case.find
    assert case.family in FAMILY_IDS and case.family in families()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_snippets_are_standalone_programs_that_say_cuda(case):
    for path in (case.broken_path, case.fixed_path):
        text = path.read_text()
        assert "samedevice" not in text, f"{path} must run without samedevice"
        assert text.startswith('"""'), f"{path} opens with a docstring naming its upstream source"
        if case.verify != "cpu":
            # "cuda", torch.device("cuda") or .cuda(), as docs/add-a-case.md allows
            assert re.search(r"[\"']cuda|\.cuda\(", text), f"{path} should say 'cuda' like the original code"


def test_version_ranges():
    assert version_in("2.13.0+cpu", ">=2.8")
    assert not version_in("2.7.1", ">=2.8")
    assert version_in("2.7.1", ">=2.0,<2.8")
    assert not version_in("1.13.1", ">=2.0,<2.8")


def test_a_broken_case_file_gets_a_one_line_error(tmp_path: Path):
    bad = tmp_path / "cases" / "bad-case.toml"
    bad.parent.mkdir()
    bad.write_text('id = "SD-9999"\ntitle = "x"\nfamily = "F42"\n')
    with pytest.raises(CaseError, match=r"bad-case.toml: family: 'F42' is not valid \(must be one of F1, "):
        parse_case(bad, tmp_path)
    bad.write_text("id = [broken")
    with pytest.raises(CaseError, match=r"bad-case.toml: invalid TOML"):
        parse_case(bad, tmp_path)
