"""The upstream tier's own logic, without PyPI: these run in ``make test``.

A failure must be the documented one, word for word and from the buggy function of the
installed release; a pass must have used the accelerator; ``-m`` decides the opt-in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from samedevice.cases import get_case
from samedevice.sim.runner import RunResult
from tests.upstream.conftest import upstream_selected
from tests.upstream.harness import PREFIX, Observation, judge
from tests.upstream.records import build_record
from tests.upstream.releases import CASES, FAIL, PASS, Release

SPEC = next(s for s in CASES if s.slug == "lightly-dino-loss-center")
CASE = get_case(SPEC.slug)
TORCH = "2.13.0"
DOCUMENTED = CASE.error.message_for(TORCH).text


def _result(target: Path, version: str, *, exception: dict | None = None, usage: int = 20,
            done: bool = True) -> RunResult:
    lines = [PREFIX + json.dumps({"event": "imported", "distribution": "lightly", "version": version,
                                  "file": str(target / "lightly/__init__.py"),
                                  "torch_file": "/venv/site-packages/torch/__init__.py"})]
    if done and exception is None:
        lines.append(PREFIX + json.dumps({"event": "done", "loss": 1.0}))
    record = {"status": "error" if exception else "ok", "exception": exception, "usage_all": usage}
    return RunResult(Path("driver.py"), "cuda", 1 if exception else 0, 1.0, "\n".join(lines), "",
                     record)


def _failure(target: Path, message: str = DOCUMENTED, function: str = "forward") -> dict:
    frame = {"file": str(target / "lightly/loss/dino_loss.py"), "line": 1, "name": function, "code": ""}
    return {"type": "RuntimeError", "message": message, "frames": [frame]}


def test_documented_failure_matches(tmp_path: Path) -> None:
    obs = judge(CASE, SPEC, Release("1.5.11", FAIL), tmp_path,
                _result(tmp_path, "1.5.11", exception=_failure(tmp_path)), TORCH)
    assert obs.observed == FAIL and obs.problems == []


@pytest.mark.parametrize(("failure", "why"), [
    ({"message": "Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!"},
     "message"),
    ({"function": "update"}, "did not pass through forward()"),
])
def test_other_failures_do_not_count(tmp_path: Path, failure: dict, why: str) -> None:
    obs = judge(CASE, SPEC, Release("1.5.11", FAIL), tmp_path,
                _result(tmp_path, "1.5.11", exception=_failure(tmp_path, **failure)), TORCH)
    assert any(why in p for p in obs.problems)


def test_failure_outside_the_installed_release_does_not_count(tmp_path: Path) -> None:
    obs = judge(CASE, SPEC, Release("1.5.11", FAIL), tmp_path / "elsewhere",
                _result(tmp_path / "elsewhere", "1.5.11", exception=_failure(tmp_path)), TORCH)
    assert any("installed release" in p for p in obs.problems)


def test_pass_must_use_the_accelerator(tmp_path: Path) -> None:
    obs = judge(CASE, SPEC, Release("1.5.12", PASS), tmp_path, _result(tmp_path, "1.5.12", usage=0), TORCH)
    assert obs.observed == PASS and any("never used the accelerator" in p for p in obs.problems)


def test_wrong_release_imported(tmp_path: Path) -> None:
    obs = judge(CASE, SPEC, Release("1.5.12", PASS), tmp_path, _result(tmp_path, "1.5.11"), TORCH)
    assert any("not 1.5.12" in p for p in obs.problems)


def test_unexpected_pass_is_a_problem(tmp_path: Path) -> None:
    obs = judge(CASE, SPEC, Release("1.5.11", FAIL), tmp_path, _result(tmp_path, "1.5.11"), TORCH)
    assert any("expected fail, observed pass" in p for p in obs.problems)


@pytest.mark.parametrize(("expr", "selected"), [
    ("", False), ("upstream", True), ("not upstream", False), ("upstream and not slow", True),
    ("slow or upstream", True), ("not slow", False), ("gpu", False),
])
def test_opt_in(expr: str, selected: bool) -> None:
    assert upstream_selected(expr) is selected


def test_record_schema() -> None:
    observations = [Observation("1.5.11", FAIL, FAIL, 1.0, 6, "RuntimeError", DOCUMENTED),
                    Observation("1.5.12", PASS, PASS, 1.0, 20)]
    record = build_record(CASE, SPEC, observations, TORCH)
    assert list(record) == ["case", "date", "torch", "python", "device", "package", "how",
                            "driver", "requirements", "results"]
    assert record["driver"] == "tests/upstream/drivers/lightly-dino-loss-center.py"
    assert record["results"] == [
        {"version": "1.5.11", "expected": FAIL, "observed": FAIL, "exception": "RuntimeError",
         "message": DOCUMENTED},
        {"version": "1.5.12", "expected": PASS, "observed": PASS},
    ]
