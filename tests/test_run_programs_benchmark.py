"""The run benchmark's material (benchmarks/programs, issue 25) is what its README says: each
program keeps its upstream files, names a license, and each bug's patch applies to them and puts
the culprit's lines inside the patched file -- so a figure it prints is about the bugs described."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from run_programs import half, load_programs, parse_made_at  # noqa: E402

PROGRAMS = load_programs(None)
FIELDS = {"name", "repo", "commit", "files", "license", "script", "bugs"}
FAMILIES = {f"F{i}" for i in range(1, 11)}


def test_at_least_thirty_licensed_programs():
    assert len(PROGRAMS) >= 30
    assert all(p["license"] and p["license"] != "NOASSERTION" for p in PROGRAMS)


@pytest.mark.parametrize("prog", PROGRAMS, ids=[p["name"] for p in PROGRAMS])
def test_program_files_and_bug_patches(prog, tmp_path):
    assert FIELDS <= prog.keys()
    upstream = prog["_dir"] / "upstream"
    for path in prog["files"]:
        assert (upstream / path).is_file(), f"{path} is listed but not kept"
    assert (upstream / prog.get("cwd", ".") / prog["script"]).is_file() or (upstream / prog["script"]).is_file()
    for bug in prog["bugs"]:
        assert bug["family"] in FAMILIES
        assert bug["culprit"]["expr"] and len(bug["culprit"]["lines"]) == 2
        run = tmp_path / bug["id"]
        shutil.copytree(upstream, run)  # a real bug's upstream/ is the buggy commit itself
        if bug.get("patch"):
            if shutil.which("patch") is None:
                pytest.skip("the benchmark applies its bugs with patch(1), which this machine lacks")
            proc = subprocess.run(["patch", "-p1", "-s", "-i", str(prog["_dir"] / bug["patch"])],
                                  cwd=run, capture_output=True, text=True)
            assert proc.returncode == 0, proc.stdout + proc.stderr
        # the culprit's file is named by a suffix of its path, as the runner matches it
        kept = [f for f in prog["files"] if f == bug["culprit"]["file"] or f.endswith("/" + bug["culprit"]["file"])]
        assert len(kept) == 1, f"{bug['id']}: {bug['culprit']['file']} is not one file of the program"
        target = run / kept[0]
        first, last = bug["culprit"]["lines"]
        assert 1 <= first <= last <= len(target.read_text().splitlines()), bug["id"]


def test_halves_and_made_at_parsing():
    assert {half(f"{p['name']}/{b['id']}") for p in PROGRAMS for b in p["bugs"]} == {"tune", "check"}
    assert parse_made_at("examples/latent_ode.py:253  h = rec.initHidden()") == ("examples/latent_ode.py", 253)
