"""A long paste's anchors are found by a plan (messages.anchor_matches) instead of one pass of the
whole alternation: the matches must be exactly those of the full pass, on the world's pastes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from samedevice.explain.dialect import compiled_exact_case
from samedevice.explain.knowledge import _raw_rules, build
from samedevice.explain.messages import _PLAN_FROM, anchor_matches

ROOT = Path(__file__).resolve().parents[2]
SEED = Path(__file__).parent / "seed"
LOG = "[rank0]:[2024-05-01 12:00:00,000] INFO train.py:88 step 1 loss=0.1234 lr=0.0001 device=cuda:0\n"


@pytest.fixture(scope="module")
def kb() -> dict:
    return build(with_cases=False)


def _reports() -> list[str]:
    rows = [json.loads(line) for line in (ROOT / "benchmarks" / "devset" / "reports.jsonl").open(encoding="utf-8")]
    return [r["text"] for r in rows] + [p.read_text(encoding="utf-8") for p in sorted(SEED.glob("*.txt"))]


def _spans(matches) -> list[tuple[int, int]]:
    return [m.span() for m in matches]


def test_every_anchor_has_a_plan(kb):
    plan = kb["messages"]["anchor_plan"]
    assert plan is not None and plan["width"] < 2000
    assert len(plan["needles"]) == len(_raw_rules()["messages"]["anchors"])


def test_the_plan_finds_exactly_what_the_full_pass_finds(kb):
    anchor = compiled_exact_case(kb["messages"]["anchor"])
    plan = kb["messages"]["anchor_plan"]
    reports = _reports()
    rng = random.Random(29)
    # every real report inside a long log, several to a paste, at random places and joins
    for start in range(0, len(reports), 80):
        parts = reports[start:start + 80]
        text = ""
        for part in parts:
            text += LOG * rng.randint(0, 15) + part + rng.choice(["\n", " ", "", "\n\n"])
        text += LOG * max(0, (_PLAN_FROM - len(text)) // len(LOG) + 1)
        low = text.lower()
        assert len(low) >= _PLAN_FROM
        full = _spans(anchor.finditer(low))
        assert full, start  # the test means something only where there are anchors
        assert _spans(anchor_matches(anchor, low, plan)) == full, start
        joined = low.replace("\n", "")  # the second pass, for messages cut by a terminal's wrap
        assert _spans(anchor_matches(anchor, joined, plan)) == _spans(anchor.finditer(joined)), start


def test_a_long_paste_without_a_device_error_finds_nothing_and_short_ones_take_the_full_pass(kb):
    anchor = compiled_exact_case(kb["messages"]["anchor"])
    plan = kb["messages"]["anchor_plan"]
    frames = "".join(f'  file "/p/model_{i % 7}.py", line {i}, in forward\n    x = self.layer(x)\n' for i in range(3000))
    assert list(anchor_matches(anchor, frames, plan)) == []
    short = _reports()[0].lower()
    assert _spans(anchor_matches(anchor, short, plan)) == _spans(anchor.finditer(short)) != []
