"""The real-world dev set in benchmarks/devset: every record valid, ids unique, split by hash, no repeats of shared/devset."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
DEVSET = ROOT / "benchmarks" / "devset"
SHARED = ROOT.parent / "shared" / "devset" / "reports.jsonl"


def _records() -> list[dict]:
    lines = (DEVSET / "reports.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def split_of(record_id: str) -> str:
    """The split rule: last hex digit of sha256(id) even -> tune, odd -> check."""
    return (
        "tune"
        if int(hashlib.sha256(record_id.encode("utf-8")).hexdigest()[-1], 16) % 2 == 0
        else "check"
    )


def test_every_record_matches_the_schema():
    schema = json.loads((DEVSET / "schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    problems = [
        f"{rec.get('id', i)}: {err.message}"
        for i, rec in enumerate(_records())
        for err in validator.iter_errors(rec)
    ]
    assert problems == []


def test_ids_and_urls_are_unique():
    records = _records()
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids))
    urls = [r["url"].rstrip("/") for r in records]
    assert len(urls) == len(set(urls))


def test_split_follows_the_hash_rule():
    assert [r["split"] for r in _records()] == [split_of(r["id"]) for r in _records()]


def test_split_rule_examples():
    # pinned values, so a change of rule (not of data) shows up here
    assert hashlib.sha256(b"gh-pytorch-pytorch-2830").hexdigest()[-1] == "9"
    assert split_of("gh-pytorch-pytorch-2830") == "check"
    assert split_of("gh-a-b-2") == "tune"


def test_unknown_family_has_low_confidence_and_labelled_family_has_evidence():
    for r in _records():
        if r["family"] == "unknown":
            assert r["confidence"] == "low", r["id"]
        else:
            assert not r["evidence"].startswith("none"), r["id"]


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/devset is not checked out here")
def test_no_record_repeats_the_shared_devset():
    shared = [
        json.loads(line) for line in SHARED.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    old_urls = {r["url"].rstrip("/") for r in shared}
    old_pairs = {(r["url"].rstrip("/"), r["text"]) for r in shared}
    old_ids = {r["id"] for r in shared}
    for r in _records():
        assert (r["url"].rstrip("/"), r["text"]) not in old_pairs, r["id"]
        assert r["url"].rstrip("/") not in old_urls, r["id"]
        assert r["id"] not in old_ids, r["id"]


def test_generated_files_match_the_records():
    """situations.md and README.md's count section are what summary.py renders from reports.jsonl."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("devset_summary", DEVSET / "summary.py")
    summary = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summary)
    records = summary.load()
    assert (DEVSET / "situations.md").read_text(encoding="utf-8") == summary.render_situations(
        records
    )
    readme = (DEVSET / "README.md").read_text(encoding="utf-8")
    assert readme == summary.readme_with_counts(readme, summary.render_counts(records))


def test_era_buckets():
    import importlib.util

    spec = importlib.util.spec_from_file_location("devset_summary", DEVSET / "summary.py")
    summary = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summary)
    assert [summary.era(v) for v in ("0.4", "1.13.0", "2.x", "unknown")] == [
        "0.x",
        "1.x",
        "2.x",
        "unknown",
    ]
