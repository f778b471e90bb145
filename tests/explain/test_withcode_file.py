"""The with-code benchmark's records: valid, complete on disk, and split the documented way."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "withcode"
sys.path.insert(0, str(ROOT / "benchmarks"))

from explain_withcode import load, named, split_of  # noqa: E402

SCHEMA = Draft202012Validator(json.loads((DATA / "schema.json").read_text()))
RECORDS = load()


def test_every_record_is_valid_and_its_files_are_kept():
    assert len(RECORDS) >= 150
    problems = []
    for r in RECORDS:
        problems += [f"{r['id']}: {e.message}" for e in SCHEMA.iter_errors({k: v for k, v in r.items() if k != "split"})]
        before = DATA / "src" / r["id"] / "before"
        for f in r["files"]:
            if not (before / f).is_file():
                problems.append(f"{r['id']}: {f} is not kept")
        culprit = before / r["culprit"]["path"]
        lo, hi = r["culprit"]["lines"]
        if culprit.is_file():
            count = len(culprit.read_text(encoding="utf-8", errors="replace").splitlines())
            if not 1 <= lo <= hi <= count:
                problems.append(f"{r['id']}: lines {lo}-{hi} outside {count}")
        if not (DATA / "src" / r["id"] / "after" / r["culprit"]["path"]).is_file():
            problems.append(f"{r['id']}: the fixed file is not kept")
    assert problems == []


def test_ids_are_unique_and_the_halves_are_stable():
    ids = [r["id"] for r in RECORDS]
    assert len(ids) == len(set(ids))
    assert split_of("gh-lightly-ai-lightly-1630") == "tune"
    halves = {r["split"] for r in RECORDS}
    assert halves == {"tune", "check"}


def test_named_means_a_line_of_the_changed_statement():
    record = {"culprit": {"path": "pkg/loss.py", "lines": [10, 12]}}
    hit = {"code": {"diagnosis": {"path": "loss.py", "line": 30, "end_line": 30}},
           "culprit": {"made_at": "/home/u/proj/pkg/loss.py:11  self.w = torch.ones(3)"}}
    miss = {"code": {"diagnosis": {"path": "loss.py", "line": 30, "end_line": 30}},
            "culprit": {"made_at": "pkg/other.py:11  w = 1"}}
    statement = {"code": {"diagnosis": {"path": "pkg/loss.py", "line": 12, "end_line": 14}},
                 "culprit": {"made_at": "pkg/model.py:3  x = 1"}}
    assert named(hit, record) and not named(miss, record) and named(statement, record)
    assert not named({"code": None, "culprit": None}, record)
