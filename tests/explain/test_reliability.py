"""Reliability: adversarial pastes finish in both engines, and anchors have no unbounded repeat.

Speed itself is measured by benchmarks/explain_adversarial.py (time at a size and at twice it);
here the inputs only have to finish within a generous subprocess timeout, which a quadratic
regex (75 s for the first input before the fix) does not.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, run_cli

sys.path.insert(0, str(ROOT / "benchmarks"))
from explain_adversarial import _NODE, SCRIPT, inputs

ADVERSARIAL = inputs()


def _unbounded(pattern: str) -> list[str]:
    """The unbounded repeats (+, *, {n,}) of a regex, outside character classes and escapes."""
    found, i, in_class = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif ch in "+*":
            found.append(pattern[max(0, i - 12) : i + 1])
        elif ch == "{" and pattern[i:].split("}")[0].endswith(","):
            found.append(pattern[max(0, i - 12) : i + 4])
        i += 1
    return found


def test_anchors_have_only_bounded_repeats(kb):
    """Anchors run over the whole paste; every other pattern runs on a line or a window of at
    most window_lines x max_line characters."""
    assert _unbounded(kb["messages"]["anchor"]) == []


def test_the_unbounded_check_can_fail():
    assert _unbounded(r"can't convert \S+ tensor") == [r"t convert \S+"]
    assert _unbounded(r"a[+*]b\+c{1,4}") == []


_PY_RUNNER = """
import json, sys
from samedevice.explain.clean import InputError, check_text
from samedevice.explain.engine import explain_text
from samedevice.explain.knowledge import build
kb = build()
out = []
for text in json.load(open(sys.argv[1], encoding="utf-8")):
    try:
        check_text(text)
        out.append(explain_text(text, kb)["template"])
    except InputError:
        out.append("refused")
print(json.dumps(out))
"""


def test_adversarial_pastes_finish_in_python(tmp_path):
    src = tmp_path / "inputs.json"
    src.write_text(json.dumps(list(ADVERSARIAL.values())), encoding="utf-8")
    r = subprocess.run([sys.executable, "-c", _PY_RUNNER, str(src)], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    got = dict(zip(ADVERSARIAL, json.loads(r.stdout), strict=True))
    assert got["400 KB log then a traceback"] == "T1"
    assert got["can'tconvert repeated"] is None


def test_a_400_kb_paste_through_the_cli(tmp_path):
    f = tmp_path / "paste.txt"
    f.write_text(ADVERSARIAL["400 KB log then a traceback"], encoding="utf-8")
    r = run_cli("--json", str(f), timeout=120)
    data = json.loads(r.stdout)
    assert (data["template"], data["op"], data["argument"]) == ("T1", "addmm", "mat1")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (needed to run explain.js)")
def test_adversarial_pastes_finish_in_the_browser_engine(tmp_path):
    from samedevice.explain.browser import build_data

    data, src, runner = tmp_path / "data.json", tmp_path / "inputs.json", tmp_path / "run.js"
    data.write_text(json.dumps(build_data()), encoding="utf-8")
    src.write_text(json.dumps(list(ADVERSARIAL.values())), encoding="utf-8")
    runner.write_text(_NODE, encoding="utf-8")
    r = subprocess.run(["node", str(runner), str(SCRIPT), str(data), str(src)], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)) == len(ADVERSARIAL)
