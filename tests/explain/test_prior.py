"""The tune-half family prior (explain/prior.toml) that fills a thin paste's ranks 2-3.

Synthetic pastes and a synthetic prior (the shipped file is generated from the dev set and
checked for being current, not asserted value by value, so the tests do not pin its counts).
"""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from conftest import ROOT

THIN = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
RICH = (
    'Traceback (most recent call last):\n  File "/home/u/proj/model.py", line 9, in forward\n'
    "    mask = torch.ones(x.shape[0])\n" + THIN
)


@pytest.fixture(scope="module")
def run_with(kb):
    from samedevice.explain.engine import explain_text

    def run(text: str, t1: dict[str, int], min_reports: int = 2) -> dict:
        kb2 = copy.deepcopy(kb)
        kb2["reports_prior"] = {"min_reports": min_reports, "slots": 2, "margin": 2, "templates": {"T1": t1}}
        return explain_text(text, kb2)

    return run


def test_prior_file_is_generated_from_the_current_tune_half():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "explain_prior.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_thin_paste_keeps_the_catalogue_first_and_takes_ranks_two_and_three_from_the_counts(run_with):
    catalogue = run_with(THIN, {})
    assert catalogue["thin"] and catalogue["evidence"] == []
    first = catalogue["families"][0]
    counts = {"F9": 7, "F6": 5, first: 20, "F5": 1}
    result = run_with(THIN, counts)
    assert result["families"][:3] == [first, "F9", "F6"]  # F5 has one report: below min_reports
    assert result["evidence"] == [] and result["thin"] is True
    assert result["next"] == catalogue["next"]
    assert result["prior"] == {"template": "T1", "reports": 33, "families": [{"family": "F9", "reports": 7}, {"family": "F6", "reports": 5}]}
    # the catalogue's other families follow in its order, each once
    assert result["families"][3:] == [f for f in catalogue["families"] if f not in (first, "F9", "F6")]


def test_the_report_calls_the_counts_a_frequency_not_evidence(run_with):
    from samedevice.explain.report import render

    text = render(run_with(THIN, {"F9": 7, "F6": 5}), url=lambda u: u, width=1000)  # unwrapped
    assert "most often, in real T1 reports: F9 Device-bound argument (7 of 12), F6 Lifecycle state (5 of 12)" in text
    assert "That is a frequency, not evidence" in text


def test_a_paste_with_evidence_is_ranked_by_its_evidence_alone(run_with, explain):
    base = explain(RICH)
    assert base["evidence"] and not base["thin"]
    result = run_with(RICH, {"F9": 7, "F6": 5})
    assert result["families"] == base["families"]
    assert result["prior"] is None


def test_no_counts_at_the_threshold_leave_the_catalogue_order(run_with):
    result = run_with(THIN, {"F9": 1, "F6": 1})
    assert result["families"] == run_with(THIN, {})["families"]
    assert result["prior"] is None


def test_a_count_displaces_the_catalogue_only_with_twice_its_reports(run_with):
    catalogue = run_with(THIN, {})
    first, second = catalogue["families"][:2]
    assert {first, second}.isdisjoint({"F9", "F6"})
    # F9 has twice the reports of the catalogue's second family: it takes rank 2; F6 has 3
    # against 2, which is noise, so rank 3 stays the catalogue's
    result = run_with(THIN, {"F9": 4, "F6": 3, second: 2})
    assert result["families"][:3] == [first, "F9", second]
    assert result["prior"]["families"] == [{"family": "F9", "reports": 4}]
    assert result["families"][3:] == [f for f in catalogue["families"] if f not in (first, "F9", second)]


def test_the_counts_leave_out_the_wave_collected_by_cause():
    # wave 4's queries named causes (devset/README.md): its family mix is what was searched for
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from explain_prior import counted

    record = {"split": "tune", "family": "F2", "template": "T1"}
    assert counted(record) and counted({**record, "wave": 5})
    assert not counted({**record, "wave": 4})
    assert not counted({**record, "split": "check"}) and not counted({**record, "family": "unknown"})
