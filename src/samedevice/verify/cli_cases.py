"""``samedevice cases [--json]``: the cases and their metadata, read from the case files."""

from __future__ import annotations

import argparse
import json

from samedevice.cases import CaseError, families, select, template_titles
from samedevice.cli import UserError, report_case_problems


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print every field as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        cases, problems = select()
    except CaseError as e:
        raise UserError(str(e)) from None
    problems = list(problems)
    if args.json:
        from samedevice.docs_url import page_url

        rows = []
        for c in cases:
            try:
                row = c.to_dict()
            except CaseError as e:  # a broken record file: the case is listed, the record is not
                problems.append(str(e))
                row = c.to_dict(records=False)
            # "url": the page on the site (the published one unless --docs-url says otherwise)
            rows.append({**row, "url": page_url(c.page_url)})
        print(json.dumps(rows, indent=2))
        report_case_problems("cases", problems)
        return 1 if problems else 0
    rows = [("ID", "FAMILY", "TEMPLATE", "VERIFY", "SLUG / TITLE")]
    for c in cases:
        # titles are Markdown (`code` spans for the site); a terminal shows them plain
        rows.append((c.id, c.family, c.error.template, c.verify, f"{c.slug}: {c.title.replace('`', '')}"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    print(f"\n{len(cases)} cases")
    _legend(cases)
    report_case_problems("cases", problems)
    return 1 if problems else 0


# what each VERIFY value means (the case's `verify` field, data/case.schema.json)
_HOW = {"sim": "proved on the simulated accelerator (one process)",
        "dist": "proved on the simulated accelerator, with several processes",
        "cpu": "an environment bug, proved in a CPU-only PyTorch as it is",
        "gpu-only": "cannot be shown without a real GPU; verify skips it and says why"}


def _legend(cases: list) -> None:
    fams, titles = families(), template_titles()
    print("\nFAMILY (root cause):")
    for f in sorted({c.family for c in cases}, key=lambda f: int(f[1:])):
        print(f"  {f:<4} {fams.get(f, {}).get('title', f)}")
    print("TEMPLATE (the message's shape):")
    for t in sorted({c.error.template for c in cases}, key=lambda t: int(t[1:])):
        print(f"  {t:<4} {titles.get(t, t)}")
    print("VERIFY:")
    for v in sorted({c.verify for c in cases}, key=list(_HOW).index):
        print(f"  {v:<8} {_HOW.get(v, v)}")
