"""``samedevice snippet SLUG --broken|--fixed [-o FILE]``: print or write one case's program.

The programs are the case's own ``snippets/<slug>/broken.py`` and ``fixed.py`` (from the
checkout, or the copy an installed wheel carries), so a user can run them with
``samedevice run`` without cloning the repository.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from samedevice.cases import CaseError, get_case, read_text_file
from samedevice.cli import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("slug", metavar="SLUG", help="the case's slug or id (see `samedevice cases`)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--broken", action="store_const", const="broken", dest="which",
                       help="the program that fails with the documented error")
    which.add_argument("--fixed", action="store_const", const="fixed", dest="which",
                       help="the program with the fix")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the program to FILE instead of printing it (a new file: an "
                             "existing one, or a link, only with --force)")
    parser.add_argument("--force", action="store_true", help="with -o: replace an existing FILE")


def run(args: argparse.Namespace) -> int:
    try:
        case = get_case(args.slug)
    except CaseError as e:
        raise UserError(str(e)) from None
    source = case.broken_path if args.which == "broken" else case.fixed_path
    try:
        text = read_text_file(source)
    except CaseError as e:
        raise UserError(str(e)) from None
    if not args.output:
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    if out.is_dir():
        raise UserError(f"{out} is a directory; give a file name such as {out / source.name}")
    if (out.exists() or out.is_symlink()) and not args.force:
        raise UserError(f"{out} exists; --force replaces it")
    try:
        if out.is_symlink():
            out.unlink()  # replace the link itself, never the file it points to
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot write {out}: {e.strerror or e}") from None
    print(f"wrote {out} ({case.id} {args.which}); run it with: samedevice run {out}", file=sys.stderr)
    return 0
