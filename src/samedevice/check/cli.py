"""``samedevice check PATH...``: exit 1 when something is found, 0 when clean, 2 on bad usage or
when the checker failed on a file (``SD999``: reported, the other files still checked)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from samedevice.cli import UserError

from . import config, output, runner
from .engine import INTERNAL_ERROR, check_source


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="files and folders to check (default: .); - reads one file from stdin")
    p.add_argument("--format", choices=output.FORMATS, default="text", help="output format (default: text)")
    p.add_argument("--select", action="append", metavar="CODES",
                   help="only these rules: codes or prefixes, comma-separated (SD201,SD4); "
                        "overrides [tool.samedevice] select")
    p.add_argument("--ignore", action="append", metavar="CODES",
                   help="skip these rules: codes or prefixes, comma-separated")
    p.add_argument("--stdin-filename", metavar="NAME", default="<stdin>",
                   help="the path to report for code read from stdin")
    p.add_argument("--jobs", type=int, default=None, metavar="N", help="worker processes (default: CPUs)")
    p.add_argument("--statistics", action="store_true",
                   help="print files, lines and lines per second to stderr")
    p.add_argument("--list-rules", action="store_true", help="print every rule and exit")


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [v.strip() for raw in values for v in raw.split(",") if v.strip()]


def run(args: argparse.Namespace) -> int:
    if args.list_rules:
        from .registry import RULES

        for r in RULES:
            print(f"{r.code:7} {r.family:4} {r.name}: {r.summary}")
        return 0
    paths = args.paths or ["."]
    if "-" in paths and len(paths) > 1:
        raise UserError("- (stdin) cannot be combined with other paths")
    if args.jobs is not None and args.jobs < 1:
        raise UserError("--jobs must be at least 1")
    start = Path.cwd() if paths == ["-"] else Path(paths[0])
    try:
        cfg = config.load(start, _split(args.select), _split(args.ignore))
    except config.ConfigError as e:
        raise UserError(str(e)) from None
    if not cfg.select:
        raise UserError("no rule is selected: the --select and ignore lists cancel out"
                        + (f" (with {cfg.source})" if cfg.source else ""))
    t0 = time.perf_counter()
    if paths == ["-"]:
        text = sys.stdin.read()
        if args.stdin_filename.endswith(".ipynb"):
            from .notebooks import check_notebook

            findings = check_notebook(text, args.stdin_filename, cfg.select)
        else:
            findings = check_source(text, args.stdin_filename, cfg.select)
        nfiles, lines = 1, text.count("\n")
    else:
        try:
            files = runner.collect(paths, cfg.exclude)
        except runner.PathError as e:
            raise UserError(str(e)) from None
        findings, lines = runner.check_files(files, cfg.select, args.jobs, runner.progress_printer())
        nfiles = len(files)
    elapsed = time.perf_counter() - t0
    rendered = output.render(findings, args.format)
    if rendered:
        print(rendered)
    if (args.format == "text" and sys.stderr.isatty()) or args.statistics:
        print(output.summary(findings, nfiles), file=sys.stderr)
    if args.statistics:
        rate = lines / elapsed if elapsed else 0.0
        print(f"samedevice check: {nfiles} files, {lines} lines in {elapsed:.2f} s "
              f"({rate:,.0f} lines/s)", file=sys.stderr)
    if any(f.code == INTERNAL_ERROR for f in findings):
        return 2
    return 1 if findings else 0
