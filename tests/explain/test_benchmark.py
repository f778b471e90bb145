"""benchmarks/explain_devset.py runs and prints the figures it promises (without a built site)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

DEVSET = ROOT.parent / "shared" / "devset" / "reports.jsonl"


@pytest.mark.skipif(not DEVSET.is_file(), reason="shared/devset/reports.jsonl is not beside the checkout")
def test_benchmark_without_site(tmp_path):
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "explain_devset.py"), "--site", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("no built site at") for line in lines)
    rows = {line[:22].strip(): line[22:].split() for line in lines if line[:22].strip() in {
        "template accuracy", "family top-1", "family top-3", "seed-case hits"}}
    assert set(rows) == {"template accuracy", "family top-1", "family top-3", "seed-case hits"}
    done, total = map(int, rows["template accuracy"][0].split("/"))
    assert total == len(DEVSET.read_text().splitlines()) and done / total >= 0.98
    done, total = map(int, rows["family top-3"][0].split("/"))
    assert done / total >= 0.90
