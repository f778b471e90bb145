"""``samedevice notebook [SLUG ...] [--check]``: generate case pages, or check them for drift."""

from __future__ import annotations

import argparse
import sys
import time

from samedevice.cases import CaseError, select
from samedevice.cli import UserError, report_case_problems


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help="cases (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="only check that each notebook matches its sources (exit 1 if not)")


def run(args: argparse.Namespace) -> int:
    try:
        cases, skipped = select(args.slugs)
    except CaseError as e:
        raise UserError(str(e)) from None
    report_case_problems("notebook", skipped)
    from .notebook import check_notebook

    if args.check:
        problems = [p for c in cases for p in check_notebook(c)]
        for p in problems:
            print(p)
        if problems:
            print(f"\n{len(problems)} problem(s); regenerate with: samedevice notebook "
                  + " ".join(sorted({p.split('.ipynb')[0] for p in problems})), file=sys.stderr)
            return 1
        print(f"{len(cases)} notebook(s) match their sources")
        return 1 if skipped else 0

    from .execute import generate

    for i, case in enumerate(cases, 1):
        start = time.perf_counter()
        print(f"[{i}/{len(cases)}] {case.slug} ...", end="", flush=True)
        try:
            path = generate(case)
        except Exception as e:  # nbclient reports a failing cell as CellExecutionError
            print(" FAILED")
            raise UserError(f"{case.slug}: executing the notebook failed: {str(e).strip().splitlines()[-1]}") from None
        print(f" wrote {path.relative_to(case.root)} in {time.perf_counter() - start:.1f}s")
    return 1 if skipped else 0
