"""explain beside two readers of the same records (issue 11): how far is it from what the text allows?

    python benchmarks/explain_readers.py

The family goals of issue 11 are measured against one annotator's labels. Two questions decide
what a miss means, and this script answers both on random samples of labelled records:

1. Are the labels consistent? ``devset/second_annotator.jsonl``: a second annotator relabelled
   100 labelled check-half records from their threads, blind to the first labels and to explain.
   Printed: how often the two agree, and explain's figures against either annotator and on the
   records both agree on.
2. How much does the paste itself tell? ``devset/paste_readers.jsonl``: an expert reader ranked
   three families from the pasted text alone (no thread, no search), for 100 labelled records of
   each half. Printed beside explain on the same records: where the reader is ahead, the paste
   holds evidence explain does not read yet.

The readers were language-model helpers given the taxonomy and the labelling conventions
(devset/README.md), one batch of 20 records each. Session 21 (2026-11-25): the annotators agreed
on 88 of 97 records both labelled; on the check sample the paste reader reached top-1 76/100 and
top-3 93/100, against explain's 67/100 and 86/100 before that session's prose rules (71/100 and
86/100 after); on the tune sample explain was ahead (83/100 against 78/100 top-1). Session 24: on the check
sample the records only one of the two ranks right split 13 to 8 in the reader's favour, an
exact McNemar p of 0.38: on the same pastes explain and the expert reader cannot be told apart.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from math import comb
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEVSET = ROOT / "benchmarks" / "devset" / "reports.jsonl"
SECOND = ROOT / "benchmarks" / "devset" / "second_annotator.jsonl"
READERS = ROOT / "benchmarks" / "devset" / "paste_readers.jsonl"
FAMILIES = {f"F{i}" for i in range(1, 11)}


def read_jsonl(path: Path, required: tuple[str, ...]) -> list[dict]:
    """The records of one file; a malformed line stops the script with one line naming it."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            sys.exit(f"{path.name}:{n}: not JSON ({err.msg})")
        missing = [key for key in required if key not in row]
        if missing:
            sys.exit(f"{path.name}:{n}: missing {', '.join(missing)}")
        rows.append(row)
    return rows


def pct(hits: int, total: int) -> str:
    return f"{hits}/{total} ({100 * hits / total:.1f}%)" if total else "0/0"


def mcnemar(ahead: int, behind: int) -> float:
    """Exact two-sided McNemar p-value: on the records exactly one of the two ranks right, how
    likely a split at least this uneven is if both were equally good (binomial, one half)."""
    n, k = ahead + behind, min(ahead, behind)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n)


def main() -> int:
    from samedevice.explain.engine import explain_text
    from samedevice.explain.knowledge import build

    records = {r["id"]: r for r in read_jsonl(DEVSET, ("id", "text", "family", "split"))}
    second = read_jsonl(SECOND, ("id", "family"))
    readers = read_jsonl(READERS, ("id", "top3"))
    for row in second + readers:
        if row["id"] not in records:
            sys.exit(f"{row['id']}: not a dev-set record")
    for row in readers:
        if len(row["top3"]) != 3 or not set(row["top3"]) <= FAMILIES:
            sys.exit(f"{row['id']}: top3 must be three of F1-F10")

    kb = build(ROOT)
    ranked = {i: explain_text(records[i]["text"], kb)["families"] for i in {r["id"] for r in second + readers}}

    c = Counter()
    for row in second:
        first, other, got = records[row["id"]]["family"], row["family"], ranked[row["id"]]
        if other == "unknown" or first == "unknown":
            continue
        c["both"] += 1
        c["agree"] += first == other
        for name, label in (("first", first), ("second", other)):
            c[name, 1] += got[:1] == [label]
            c[name, 3] += label in got[:3]
        if first == other:
            c["agreed", 1] += got[:1] == [first]
            c["agreed", 3] += first in got[:3]
    print(f"1. second annotator (from the threads, blind), {len(second)} check-half records")
    print(f"   both gave a family: {c['both']}; they agree on {pct(c['agree'], c['both'])}")
    print(f"   {'':34}{'family top-1':>18}{'family top-3':>18}")
    for name, total in (("first", c["both"]), ("second", c["both"]), ("agreed", c["agree"])):
        label = {"first": "explain vs the first labels", "second": "explain vs the second labels",
                 "agreed": "explain where both agree"}[name]
        print(f"   {label:34}{pct(c[name, 1], total):>18}{pct(c[name, 3], total):>18}")

    print(f"\n2. expert reader of the paste alone (no thread), {len(readers)} records")
    print(f"   {'':34}{'family top-1':>18}{'family top-3':>18}")
    for split in ("check", "tune"):
        rows = [r for r in readers if records[r["id"]]["split"] == split]
        if not rows:
            continue
        d = Counter()
        for row in rows:
            gold, got = records[row["id"]]["family"], ranked[row["id"]]
            d["r1"] += row["top3"][:1] == [gold]
            d["r3"] += gold in row["top3"]
            d["e1"] += got[:1] == [gold]
            d["e3"] += gold in got[:3]
            d["ahead"] += row["top3"][:1] == [gold] and got[:1] != [gold]
            d["behind"] += got[:1] == [gold] and row["top3"][:1] != [gold]
        for label, k1, k3 in ((f"{split} half, reader ({len(rows)})", "r1", "r3"), (f"{split} half, explain", "e1", "e3")):
            print(f"   {label:34}{pct(d[k1], len(rows)):>18}{pct(d[k3], len(rows)):>18}")
        print(
            f"   top-1: reader right and explain wrong {d['ahead']}, the other way {d['behind']}"
            f" (exact McNemar, two-sided: p = {mcnemar(d['ahead'], d['behind']):.2f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
