"""benchmarks/explain_devset.py runs and prints the figures it promises (without a built site)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT

NEW = ROOT / "benchmarks" / "devset" / "reports.jsonl"
OLD = ROOT.parent / "shared" / "devset" / "reports.jsonl"
ROWS = {"template accuracy", "family top-1", "family top-3"}
SPLIT = {"top-1, evidence", "top-3, evidence", "top-1, thin paste", "top-3, thin paste"}


@pytest.mark.skipif(not (NEW.is_file() and OLD.is_file()), reason="a dev set is missing")
def test_benchmark_without_site(tmp_path):
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "explain_devset.py"), "--site", str(tmp_path), "--misses", "none"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("no built site at") for line in lines)
    new = [json.loads(line) for line in NEW.read_text(encoding="utf-8").splitlines() if line.strip()]
    sizes = {
        "check half": sum(x["split"] == "check" for x in new),
        "tune half": sum(x["split"] == "tune" for x in new),
        "old 44": len(OLD.read_text(encoding="utf-8").splitlines()),
    }
    newest = max((x.get("wave", 0) for x in new), default=0)
    if newest:  # the newest wave's check half, reported on its own
        sizes[f"check half, wave {newest} only"] = sum(x["split"] == "check" and x.get("wave") == newest for x in new)
        sizes[f"wave {newest}, both halves"] = sum(x.get("wave") == newest for x in new)
    tables: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in lines:
        head = line.split(":")[0]
        if head in sizes:
            current = head
            assert line.startswith(f"{head}: {sizes[head]} records")
            tables[current] = {}
        elif current and line[:22].strip() in ROWS | SPLIT:
            tables[current][line[:22].strip()] = line[22:].split()
    assert set(tables) == set(sizes)
    for name, rows in tables.items():
        assert ROWS <= set(rows) <= ROWS | SPLIT, name
        assert rows["template accuracy"][0].endswith(f"/{sizes[name]}")
        # explain's evidence / thin split partitions the labelled records of each set
        for k in ("1", "3"):
            whole = tuple(map(int, rows[f"family top-{k}"][0].split("/")))
            parts = [tuple(map(int, rows[f"top-{k}, {p}"][0].split("/"))) for p in ("evidence", "thin paste") if f"top-{k}, {p}" in rows]
            assert parts and tuple(map(sum, zip(*parts, strict=True))) == whole, name
    done, total = map(int, tables["old 44"]["template accuracy"][0].split("/"))
    assert done / total >= 0.98
    assert any(line.startswith("seed-case hits") for line in lines)


@pytest.mark.skipif(not NEW.is_file(), reason="the dev set is missing")
def test_calibration_benchmark_prints_both_measurements():
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "explain_calibration.py"), "--limit", "60"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("1. rule weights, learned from the tune half")
    assert "hand weights (shipped)" in out and "learned, alpha 16" in out
    assert "per form, fitted on the check half (bound)" in out
    assert "\n3. the words of a thin paste" in out and "shipped order + words, weight 1 " in out
    assert "\n4. one message, two labels" in out
    rows = {line[:44].strip(): line[44:].split() for line in out.split("\n4. ")[1].splitlines()[2:]}
    tune, check = (int(rows["labelled F10"][i]) + int(rows["labelled F7"][i]) + int(rows["labelled another family"][i]) for i in (0, 1))
    # reading the T10 pastes as F10 moves top-1 by at most their number, over the same records
    for i, n in enumerate((tune, check)):
        now, read = (rows[k][i].split("/") for k in ("family top-1, labels as they are", "family top-1, these read as F10"))
        assert now[1] == read[1] and abs(int(read[0]) - int(now[0])) <= n
    # every figure is hits/total over the same labelled records
    halves = next(line for line in out.splitlines() if line.startswith("hand weights")).split()[-4:]
    assert all("/" in cell for cell in halves)


SECOND = ROOT / "benchmarks" / "devset" / "second_annotator.jsonl"
READERS = ROOT / "benchmarks" / "devset" / "paste_readers.jsonl"


@pytest.mark.skipif(not (NEW.is_file() and SECOND.is_file() and READERS.is_file()), reason="a reader file is missing")
def test_readers_benchmark_prints_both_studies():
    records = {x["id"]: x for x in map(json.loads, NEW.read_text(encoding="utf-8").splitlines()) if x}
    second = [json.loads(line) for line in SECOND.read_text(encoding="utf-8").splitlines() if line.strip()]
    readers = [json.loads(line) for line in READERS.read_text(encoding="utf-8").splitlines() if line.strip()]
    # the second annotator relabelled labelled check-half records; the readers ranked labelled ones
    assert all(records[x["id"]]["split"] == "check" and records[x["id"]]["family"] != "unknown" for x in second)
    assert all(records[x["id"]]["family"] != "unknown" and len(set(x["top3"])) == 3 for x in readers)
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "explain_readers.py")],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    both = sum(x["family"] != "unknown" for x in second)
    assert f"   both gave a family: {both};" in "\n".join(lines)
    for label in ("explain vs the first labels", "explain vs the second labels", "explain where both agree"):
        row = next(line for line in lines if line.strip().startswith(label))
        assert len(row.split(")")) == 3  # top-1 and top-3, each hits/total (pct)
    for split in ("check", "tune"):
        n = sum(records[x["id"]]["split"] == split for x in readers)
        reader = next(line for line in lines if line.strip().startswith(f"{split} half, reader ({n})"))
        mine = next(line for line in lines if line.strip().startswith(f"{split} half, explain"))
        assert reader.count(f"/{n} (") == 2 and mine.count(f"/{n} (") == 2
    # each half's discordant pairs with their exact McNemar p-value
    assert sum("(exact McNemar, two-sided: p = " in line for line in lines) == 2


def test_mcnemar_is_the_exact_binomial_test():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from explain_readers import mcnemar
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert mcnemar(10, 0) == mcnemar(0, 10) == 2 / 2**10
    assert mcnemar(13, 8) == pytest.approx(0.3833, abs=1e-4)
    assert mcnemar(5, 5) == mcnemar(0, 0) == 1.0
