"""``samedevice explain [FILE|-] [--json]``: read a pasted error, print template, causes, pages.

Exit status: 0 when a device error (or a known case) was recognised, 1 when the text holds
none, 2 for input explain cannot read (printed as one line by samedevice.cli).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

# A paste larger than this is not a paste: refuse it before reading it all into memory.
MAX_BYTES = 64 * 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", default="-", help="file holding the error or traceback ('-' or nothing: stdin)")
    parser.add_argument("--json", action="store_true", help="print the explanation as JSON")
    parser.add_argument("--source", action="append", default=[], metavar="DIR",
                        help="a checkout of the code that failed on another machine: the traceback's "
                             "paths are matched onto it by their longest common ending (repeatable)")
    parser.add_argument("--no-source", action="store_true",
                        help="read the paste only, not the source files its traceback names")
    # --docs-url (the base of page links) is every command's: samedevice.cli adds it


def run(args: argparse.Namespace) -> int:
    from samedevice.cli import UserError, report_case_problems
    from samedevice.explain.clean import InputError, decode

    data = _read(args.file, UserError)
    try:
        text = decode(data)
    except InputError as e:
        raise UserError(str(e)) from None

    from samedevice.explain.cache import knowledge
    from samedevice.explain.engine import explain_text

    kb = knowledge()
    # once per run, then the answer: a broken case file costs its own page, not the answer
    report_case_problems("explain", kb.get("case_problems", []))
    read_source = not args.no_source
    sources = []
    for folder in args.source:
        if not os.path.isdir(folder):
            raise UserError(f"--source {folder}: not a folder")
        sources.append(Path(folder))
    result = explain_text(text, kb, keep_frames=read_source)
    if read_source and result["template"] is not None:
        from samedevice.explain.code import apply, read_code

        apply(result, read_code(result, sources), kb)
    result.pop("frame_list", None)
    from samedevice.docs_url import page_url as url

    if args.json:
        for page in result["pages"]:
            page["href"] = url(page["url"])
        # JSON escapes what the console cannot show (\uXXXX) and stays valid JSON
        _write(_escape_controls(json.dumps(result, indent=2, ensure_ascii=not _utf(sys.stdout)), json_text=True)
               + "\n")
    else:
        from samedevice.explain.report import render

        _write(_escape_controls(render(result, url)))
    return 0 if (result["template"] or result["cases"]) else 1


# What a paste may carry that a terminal would act on instead of showing: C0 controls but tab
# and newline (ESC starts colour, cursor and title sequences), DEL, C1 controls, and the bidi
# embeddings, overrides and isolates (U+202E reverses the text after it, disguising a line).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape_controls(text: str, json_text: bool = False) -> str:
    """Show them as ``\x1b`` / ``\u202e`` (in JSON as ``\u001b``, which stays valid JSON)."""
    def shown(m: re.Match) -> str:
        c = ord(m.group())
        return f"\\u{c:04x}" if json_text or c > 0xFF else f"\\x{c:02x}"

    return _CONTROLS.sub(shown, text)


def _utf(stream) -> bool:
    return (getattr(stream, "encoding", None) or "").lower().replace("-", "").startswith("utf")


def _write(text: str) -> None:
    """Print whatever the console's encoding (cp1252 or ASCII when redirected on Windows, a C
    locale): characters it cannot show become '?' instead of a UnicodeEncodeError."""
    out = sys.stdout
    encoding = getattr(out, "encoding", None) or "utf-8"
    if not _utf(out):
        text = text.encode(encoding, errors="replace").decode(encoding, errors="replace")
    out.write(text)


def _read(name: str, UserError: type[Exception]) -> bytes:
    if name == "-":
        if sys.stdin is None or sys.stdin.closed:
            raise UserError("no input: give a file or pipe the error into stdin")
        if sys.stdin.isatty():
            print("Paste the error or traceback, then press Ctrl-D (Ctrl-Z Enter on Windows):", file=sys.stderr)
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
    else:
        try:
            if os.path.isdir(name):
                raise UserError(f"{name} is a directory; give the file that holds the error")
            with open(name, "rb") as f:
                data = f.read(MAX_BYTES + 1)
        except OSError as e:
            raise UserError(f"cannot read {name}: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise UserError(f"the input is larger than {MAX_BYTES // (1024 * 1024)} MB; paste the error and its traceback only")
    return data
