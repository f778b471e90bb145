"""``samedevice cases [--json]``: the cases and their metadata, read from the case files."""

from __future__ import annotations

import argparse
import json

from samedevice.cases import CaseError, load_cases
from samedevice.cli import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print every field as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        cases = load_cases()
    except CaseError as e:
        raise UserError(str(e)) from None
    if args.json:
        from samedevice.docs_url import page_url

        # "url": the page on the site (the published one unless --docs-url says otherwise)
        print(json.dumps([{**c.to_dict(), "url": page_url(c.page_url)} for c in cases], indent=2))
        return 0
    rows = [("ID", "FAMILY", "TEMPLATE", "VERIFY", "SLUG / TITLE")]
    for c in cases:
        # titles are Markdown (`code` spans for the site); a terminal shows them plain
        rows.append((c.id, c.family, c.error.template, c.verify, f"{c.slug}: {c.title.replace('`', '')}"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    print(f"\n{len(cases)} cases")
    return 0
