"""How much of what users hit has a page: the dev set's labelled reports against the cases.

    python benchmarks/coverage.py [--devset PATH] [--write]

For each half of the dev set (``split`` = "tune" / "check" in
``benchmarks/devset/reports.jsonl``) it prints

* **situation has a page**: the share of reports whose ``situation`` label (what the user was
  doing) is one that a case declares in its ``situations = [...]`` list;
* **explain finds the family**: among reports whose root-cause ``family`` is labelled (not
  "unknown"), the share for which ``samedevice explain`` (run in-process) lists a case page of
  that family among its first three cases.

``--write`` also stores the figures in ``benchmarks/coverage.json``, which the site's generated
Verification page reads (the page never carries hand-typed figures).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEVSET = ROOT / "benchmarks" / "devset" / "reports.jsonl"
OUT = ROOT / "benchmarks" / "coverage.json"
SPLITS = ("tune", "check")
TOP = 3


def load_devset(path: Path) -> list[dict]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        sys.exit(f"coverage: cannot read the dev set {path}: {e.strerror}")
    return [json.loads(line) for line in lines if line.strip()]


def figures(records: list[dict], cases) -> dict:
    from samedevice.explain.engine import explain_text
    from samedevice.explain.knowledge import build

    kb = build()
    family_of = {c.slug: c.family for c in cases}
    with_page = {s for c in cases for s in c.situations}
    out: dict = {}
    for split in SPLITS:
        part = [r for r in records if r.get("split") == split]
        covered = [r for r in part if r.get("situation") in with_page]
        labelled = [r for r in part if r.get("family", "unknown") != "unknown"]
        found = 0
        for r in labelled:
            first = explain_text(r["text"], kb)["cases"][:TOP]
            found += any(family_of.get(slug) == r["family"] for slug in first)
        out[split] = {
            "reports": len(part),
            "situation_has_page": len(covered),
            "labelled_family": len(labelled),
            "family_in_top3": found,
        }
    return out


def pct(k: int, n: int) -> str:
    return f"{100 * k / n:5.1f}% ({k}/{n})" if n else "   n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devset", type=Path, default=DEVSET)
    parser.add_argument("--write", action="store_true", help=f"store the figures in {OUT.name}")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from samedevice.cases import load_cases

    cases = load_cases()
    records = load_devset(args.devset)
    result = figures(records, cases)
    print(f"{len(records)} dev-set reports, {len(cases)} cases "
          f"({sum(bool(c.situations) for c in cases)} declare situations)")
    print(f"{'split':<6} {'situation has a page':<24} explain lists a page of the right family "
          f"in its first {TOP} (labelled family)")
    for split, f in result.items():
        print(f"{split:<6} {pct(f['situation_has_page'], f['reports']):<24} "
              f"{pct(f['family_in_top3'], f['labelled_family'])}")
    if args.write:
        try:
            devset = str(args.devset.resolve().relative_to(ROOT))
        except ValueError:
            devset = str(args.devset)
        OUT.write_text(json.dumps({"date": date.today().isoformat(), "devset": devset,
                                   "cases": len(cases), "top": TOP, "splits": result},
                                  indent=2) + "\n")
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
