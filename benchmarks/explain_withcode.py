"""explain on real reports whose code is available: family top-1/top-3 and "culprit named".

Each record of ``benchmarks/withcode/records/*.jsonl`` is a real report (the paste, verbatim
from its thread), the repository at the commit before its fix (the files the traceback names
and the file the fix changed, under ``benchmarks/withcode/src/<id>/before/``), and the
statement the fix changed (``culprit.path`` and ``culprit.lines``, in the file before the fix).
See ``benchmarks/withcode/README.md``.

For each record explain reads the paste, then the code exactly as a user would with
``samedevice explain --source benchmarks/withcode/src/<id>/before`` (the paths in the paste are
another machine's; they are matched by their longest common ending). It scores:

- template: explain's template equals the record's;
- family top-1 / top-3: the record's family among explain's first one / three;
- culprit named: the answer names a line inside the statement the fix changed -- the place the
  culprit was made (``made_at``) or the failing statement whose culprit it names;
- paste only: the family figures of the same pastes with ``--no-source``, side by side.

The records are split into halves by ``crc32(id) % 2`` (0: tune, 1: check). Usage:

    python benchmarks/explain_withcode.py [--split check|tune|all] [--wave N] [--json] [--list]

``--wave 1`` is the first collection (records without a ``wave`` field), ``--wave 2`` the
second; without it every record counts.
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

from samedevice.explain.cache import knowledge  # noqa: E402
from samedevice.explain.code import apply, read_code  # noqa: E402
from samedevice.explain.engine import explain_text  # noqa: E402

DATA = HERE / "withcode"
# a record whose thread does not show the root cause is labelled "unknown": it counts for the
# template and the culprit line (the fix shows that), not for the family figures
FAMILIES = {f"F{i}" for i in range(1, 11)}


def split_of(record_id: str) -> str:
    return "check" if zlib.crc32(record_id.encode()) % 2 else "tune"


def load(data: Path = DATA) -> list[dict]:
    records = []
    for part in sorted((data / "records").glob("*.jsonl")):
        for line in part.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                r["split"] = split_of(r["id"])
                records.append(r)
    seen: set[str] = set()
    unique = []
    for r in records:  # two collectors may have reached one thread: keep the first
        if r["id"] not in seen:
            seen.add(r["id"])
            unique.append(r)
    return unique


def _suffix_match(shown: str, repo_path: str) -> bool:
    a = [p for p in shown.replace("\\", "/").split("/") if p]
    b = [p for p in repo_path.split("/") if p]
    if not a or not b:
        return False
    k = min(len(a), len(b))
    return a[-k:] == b[-k:]


def named(result: dict, record: dict) -> bool:
    """Does the answer name a line of the statement the fix changed?"""
    want = record["culprit"]
    lo, hi = want["lines"]
    diag = (result.get("code") or {}).get("diagnosis")
    culprit = result.get("culprit")
    if not diag or not culprit:
        return False
    where, _, _ = culprit["made_at"].partition("  ")
    path, _, line = where.rpartition(":")
    if line.isdigit() and _suffix_match(path, want["path"]) and lo <= int(line) <= hi:
        return True
    overlap = diag["line"] <= hi and lo <= diag["end_line"]
    return overlap and _suffix_match(diag["path"], want["path"])


def score(record: dict, kb: dict, *, with_code: bool) -> dict:
    result = explain_text(record["paste"], kb, keep_frames=with_code)
    if with_code and result["template"] is not None:
        apply(result, read_code(result, [DATA / "src" / record["id"] / "before"], local=False), kb)
    fams = result["families"]
    return {
        "template": result["template"] == record["template"],
        "top1": bool(fams) and fams[0] == record["family"],
        "top3": record["family"] in fams[:3],
        "named": named(result, record) if with_code else False,
        "culprit": result.get("culprit"),
        "families": fams[:3],
    }


def measure(records: list[dict], kb: dict) -> dict:
    rows = []
    for i, r in enumerate(records, 1):
        print(f"\r  {i}/{len(records)} {r['id'][:60]:<60}", end="", file=sys.stderr, flush=True)
        code = score(r, kb, with_code=True)
        paste = score(r, kb, with_code=False)
        rows.append({"id": r["id"], "family": r["family"], "template": r["template"], "code": code, "paste": paste})
    print("\r" + " " * 70 + "\r", end="", file=sys.stderr, flush=True)
    n = len(rows)

    def count(key: str, side: str = "code") -> int:
        return sum(bool(x[side][key]) for x in rows)

    labelled = [x for x in rows if x["family"] in FAMILIES]

    def fam(key: str, side: str = "code") -> int:
        return sum(bool(x[side][key]) for x in labelled)

    return {
        "records": n, "labelled": len(labelled),
        "template": count("template"),
        "top1": fam("top1"), "top3": fam("top3"), "named": count("named"),
        "paste_top1": fam("top1", "paste"), "paste_top3": fam("top3", "paste"),
        "rows": rows,
    }


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else "0/0"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("check", "tune", "all"), default="all")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--list", action="store_true", help="one line per record")
    ap.add_argument("--wave", type=int, help="only the records of this collection wave (1: the first)")
    args = ap.parse_args(argv)
    kb = knowledge()
    records = load()
    if args.wave is not None:
        records = [r for r in records if r.get("wave", 1) == args.wave]
    halves = ("tune", "check") if args.split == "all" else (args.split,)
    out = {}
    for half in halves:
        chosen = [r for r in records if r["split"] == half]
        out[half] = measure(chosen, kb)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{'half':<6} {'records':>7}  {'template':>16}  {'culprit named':>16}  {'labelled':>8}  "
          f"{'family top-1':>16}  {'family top-3':>16}  {'paste-only top-1':>16}  {'paste-only top-3':>16}")
    for half, m in out.items():
        n, k = m["records"], m["labelled"]
        print(f"{half:<6} {n:>7}  {_pct(m['template'], n):>16}  {_pct(m['named'], n):>16}  {k:>8}  "
              f"{_pct(m['top1'], k):>16}  {_pct(m['top3'], k):>16}  {_pct(m['paste_top1'], k):>16}  "
              f"{_pct(m['paste_top3'], k):>16}")
        if args.list:
            for row in m["rows"]:
                c = row["code"]
                mark = "".join("x" if c[k] else "." for k in ("template", "top1", "top3", "named"))
                what = (c["culprit"] or {}).get("expr", "")
                print(f"   {mark} {row['id']:<48} {row['family']:<4} got {','.join(c['families']):<12} {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
