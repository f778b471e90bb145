"""The stand-in's real-program tier (issue 27), opt-in with the upstream tier: every program of
``benchmarks/programs`` (unmodified public programs) computes under ``samedevice run`` what it
computes under ``samedevice run --cpu``, and its first injected device bug raises CUDA's text
at the program's own line. ``python benchmarks/standin_programs.py`` prints the same as a table.
Some programs import pure-Python packages: ``pip install -r benchmarks/programs/requirements.txt``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from run_programs import load_programs  # noqa: E402
from standin_programs import measure  # noqa: E402

PROGRAMS = load_programs(None)


def test_the_tier_has_twenty_programs_with_an_injected_bug():
    assert sum(any(b.get("source") == "injected" for b in p["bugs"]) for p in PROGRAMS) >= 20


@pytest.mark.upstream
@pytest.mark.parametrize("prog", PROGRAMS, ids=[p["name"] for p in PROGRAMS])
def test_program_equals_the_cpu_reference_and_its_bug_raises_cudas_text(prog, record_property):
    row = measure(sys.executable, prog)
    record_property("upstream", f"{row['program']}: equal={row['equal']} ratio={row['ratio']} "
                                f"bug={row.get('bug_template')} {row.get('bug_error')}")
    assert row["equal"], row.get("diff")
    assert row["bug_ok"], row.get("bug_detail")
