"""``samedevice verify [SLUG ...]``: prove each case, with progress and a summary table."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from samedevice.cases import CaseError, select
from samedevice.cli import UserError, report_case_problems

from . import FAIL, PASS, SKIP, CaseResult, verify_cases
from .records import add_record


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help="cases to verify (default: all)")
    parser.add_argument("--real", action="store_true",
                        help="run on real CUDA with no simulation (skips where no GPU exists)")
    parser.add_argument("--record", action="store_true",
                        help="write the result into cases/<slug>.verified.json")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--cold", action="store_true",
                        help="start a fresh interpreter for every program instead of forking a "
                             "warm one per job (slower; for comparison)")
    parser.add_argument("--pages", metavar="DIR",
                        help="keep each case page as this run executed it in DIR, for the page "
                             "test (SAMEDEVICE_PAGES_RUN=DIR pytest tests/test_notebooks.py) to "
                             "compare instead of executing it again")
    parser.add_argument("-j", "--jobs", type=int, default=min(4, os.cpu_count() or 1),
                        help="cases verified at once (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    try:
        cases, skipped = select(args.slugs)
    except CaseError as e:
        raise UserError(str(e)) from None
    report_case_problems("verify", skipped)  # before the work: the user sees at once what is left out
    if not cases:
        raise UserError("no cases found")
    if args.jobs < 1:
        raise UserError("--jobs must be at least 1")
    import torch  # noqa: F401  (before the header: a missing PyTorch is said in one line, by main)
    total = len(cases)
    start = time.perf_counter()
    done = 0
    width = max(len(c.slug) for c in cases)
    stream = sys.stderr if args.json else sys.stdout
    how = ("a fresh interpreter per program" if args.cold or args.real
           else "a warm interpreter per job, each case's page run once")
    print(f"verifying {total} case(s) {'on real CUDA' if args.real else 'on the simulated accelerator'}"
          f" with {args.jobs} job(s), {how}", file=stream, flush=True)

    def progress(r: CaseResult) -> None:
        nonlocal done
        done += 1
        status = r.status.upper()
        detail = r.reason if r.status == SKIP else (r.problems[0].splitlines()[0] if r.problems else "")
        print(f"[{done:>{len(str(total))}}/{total}] {r.case.slug:<{width}}  {status:<4}  "
              f"{r.seconds:5.1f}s  {detail}", file=stream, flush=True)

    pages = Path(args.pages) if args.pages else None
    results = verify_cases(cases, real=args.real, jobs=args.jobs, cold=args.cold, pages_dir=pages,
                           on_result=progress)
    if args.record:
        for r in results:
            if r.status != SKIP:
                try:
                    add_record(r.case, r.record())
                except CaseError as e:  # that file is left as it was; the others are written
                    skipped = (*skipped, f"{e} (this run's record for it was not written)")
                    report_case_problems("verify", skipped[-1:])
    counts = {k: sum(r.status == k for r in results) for k in (PASS, FAIL, SKIP)}
    if args.json:
        print(json.dumps({"results": [r.to_dict() for r in results], "summary": counts}, indent=2))
    else:
        for r in results:
            if r.status == FAIL:
                print(f"\nFAIL {r.case.slug}:", file=stream)
                for p in r.problems:
                    print(f"  - {p}", file=stream)
        broken = f", {len(skipped)} with broken case data" if skipped else ""
        print(f"\n{counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped{broken} "
              f"in {time.perf_counter() - start:.1f}s", file=stream)
    return 1 if counts[FAIL] or skipped else 0
