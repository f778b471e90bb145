"""`samedevice verify` proves what it claims: swapping a case's programs must make it fail.

(`make test` runs `samedevice verify` over every case itself; these tests check that the
verdict depends on the programs, and that the command line behaves.)
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from samedevice.cases import load_cases
from samedevice.verify import FAIL, check_error, compare_values, verify_cases

CASES = [c for c in load_cases() if c.verify != "gpu-only"]


@pytest.mark.slow
def test_swapping_broken_and_fixed_makes_verify_fail_for_every_case():
    # one batched run over every case, on two warm interpreters (a fork per program)
    results = verify_cases(CASES, jobs=2, swapped=True)
    assert [r.case.slug for r in results] == [c.slug for c in CASES]
    wrong = {}
    for r in results:
        expected = [r.status == FAIL,
                    any(p.startswith("broken: broken.py finished without an error") for p in r.problems),
                    any(p.startswith("fixed: fixed.py did not finish") for p in r.problems)]
        if not all(expected):
            wrong[r.case.slug] = (r.status, r.problems)
    assert wrong == {}, "swapped programs that still verify (or fail for another reason)"


def test_a_different_message_or_exception_is_a_failure():
    case = CASES[0]
    right = {"type": case.error.exception, "message": case.error.message_for("2.13.0").text}
    assert check_error(case, right, "2.13.0") == []
    altered = dict(right, message=right["message"].replace("cuda:0", "cuda:1"))
    assert any("message differs" in p for p in check_error(case, altered, "2.13.0"))
    wrong_type = dict(right, type="TypeError")
    assert check_error(case, wrong_type, "2.13.0") == [f"raised TypeError, expected {case.error.exception}"]
    assert check_error(case, None, "2.13.0") == ["broken.py finished without an error"]


def test_values_that_differ_from_the_cpu_run_are_reported():
    import torch

    problems, count = compare_values({"x": torch.ones(2)}, {"x": torch.zeros(2)})
    assert count == 0 and problems and problems[0].startswith("x:")
    problems, count = compare_values({"x": torch.ones(2), "n": 3}, {"x": torch.ones(2), "n": 3})
    assert (problems, count) == ([], 1)


def test_unknown_case_is_a_one_line_error():
    out = subprocess.run([sys.executable, "-m", "samedevice", "verify", "no-such-case"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.startswith("samedevice verify: no case named 'no-such-case'")
    assert "Traceback" not in out.stderr


def test_cases_json_lists_every_case_with_its_metadata():
    out = subprocess.run([sys.executable, "-m", "samedevice", "cases", "--json"],
                         capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert [d["slug"] for d in data] == [c.slug for c in load_cases()]
    first = data[0]
    assert {"id", "family", "templates", "error", "upstream", "versions", "verified"} <= set(first)
    assert first["error"]["messages"][0]["text"].startswith(("Expected", "Input", "No backend",
                                                             "indices", "module", "Attempting",
                                                             "can't"))
