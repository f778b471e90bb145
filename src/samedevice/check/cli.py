"""``samedevice check PATH...``: exit 1 when something is found, 0 when clean, 2 on bad usage or
when the checker failed on a file (``SD999``: reported, the other files still checked)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from samedevice.cli import UserError, drop_stdout

from . import config, output, runner
from .engine import INTERNAL_ERROR, check_source


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="files and folders to check (default: .); - reads one file from stdin")
    p.add_argument("--output-format", "--format", dest="format", choices=output.FORMATS, default="text",
                   help="output format (default: text)")
    p.add_argument("--select", action="append", metavar="CODES",
                   help="only these rules: codes or prefixes, comma-separated (SD201,SD4); "
                        "overrides [tool.samedevice] select")
    p.add_argument("--extend-select", action="append", metavar="CODES",
                   help="these rules too, on top of the selection")
    p.add_argument("--ignore", action="append", metavar="CODES",
                   help="skip these rules: codes or prefixes, comma-separated")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even when something is found (2 still means an error)")
    p.add_argument("--stdin-filename", metavar="NAME", default="<stdin>",
                   help="the path to report for code read from stdin")
    p.add_argument("--jobs", type=int, default=None, metavar="N", help="worker processes (default: CPUs)")
    p.add_argument("--statistics", action="store_true",
                   help="print how many findings each rule has instead of the findings, and files, "
                        "lines and lines per second to stderr")
    p.add_argument("--explain", metavar="CODE", help="print what a rule finds, why, and what to write instead")
    p.add_argument("--list-rules", action="store_true", help="print every rule and exit")


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [v.strip() for raw in values for v in raw.split(",") if v.strip()]


def _explain(code: str) -> str:
    from .links import rule_url
    from .registry import BY_CODE

    rule = BY_CODE.get(code.strip().upper())
    if rule is None:
        raise UserError(f"--explain {code}: no such rule (samedevice check --list-rules lists them)")
    parts = [f"{rule.code} {rule.name} ({rule.family})", "", f"What it does: {rule.summary}.", "",
             f"Why is this bad: {rule.why}", "", "Example:", "", _indent(rule.example), "",
             "Use instead:", "", _indent(rule.instead)]
    if rule.limits:
        parts += ["", f"Limits: {rule.limits}"]
    return "\n".join([*parts, "", rule_url(rule.code)])


def _indent(code: str) -> str:
    return "\n".join("    " + line if line else line for line in code.rstrip().splitlines())


def _config(start: Path, lists: tuple) -> config.Config:
    try:
        cfg = config.load(start, *lists)
    except config.ConfigError as e:
        raise UserError(str(e)) from None
    if not cfg.select:
        raise UserError("no rule is selected: the --select and ignore lists cancel out"
                        + (f" (with {cfg.source})" if cfg.source else ""))
    return cfg


def run(args: argparse.Namespace) -> int:
    if args.list_rules:
        from .registry import RULES

        for r in RULES:
            print(f"{r.code:7} {r.family:4} {r.name}: {r.summary}")
        return 0
    if args.explain:
        print(_explain(args.explain))
        return 0
    paths = args.paths or ["."]
    if "-" in paths and len(paths) > 1:
        raise UserError("- (stdin) cannot be combined with other paths")
    if args.jobs is not None and args.jobs < 1:
        raise UserError("--jobs must be at least 1")
    lists = (_split(args.select), _split(args.ignore), _split(args.extend_select))
    t0 = time.perf_counter()
    if paths == ["-"]:
        cfg = _config(Path.cwd(), lists)
        text = sys.stdin.read()
        if args.stdin_filename.endswith(".ipynb"):
            from .notebooks import check_notebook

            findings = check_notebook(text, args.stdin_filename, cfg.select)
        else:
            findings = check_source(text, args.stdin_filename, cfg.select)
        findings = cfg.apply_per_file_ignores(findings)
        nfiles, lines = 1, text.count("\n")
    else:
        # each path under the pyproject.toml nearest to it (a monorepo's packages keep theirs)
        groups: dict[Path | None, tuple[config.Config, list[str]]] = {}
        for raw in paths:
            cfg = _config(Path(raw), lists)
            groups.setdefault(cfg.source, (cfg, []))[1].append(raw)
        findings, lines, nfiles, seen = [], 0, 0, set[str]()
        for cfg, group in groups.values():
            try:
                files = runner.collect(group, cfg.exclude, cfg.source.parent if cfg.source else None, seen)
            except runner.PathError as e:
                raise UserError(str(e)) from None
            found, n = runner.check_files(files, cfg.select, args.jobs, runner.progress_printer())
            findings += cfg.apply_per_file_ignores(found)
            lines += n
            nfiles += len(files)
        findings.sort()
    elapsed = time.perf_counter() - t0
    rendered = output.statistics(findings) if args.statistics else output.render(findings, args.format)
    if rendered:
        try:
            print(rendered, flush=True)
        except BrokenPipeError:  # the reader left (`| head`): the findings still set the status
            drop_stdout()
    if (args.format == "text" and sys.stderr.isatty()) or args.statistics:
        print(output.summary(findings, nfiles), file=sys.stderr)
    if args.statistics:
        rate = lines / elapsed if elapsed else 0.0
        print(f"samedevice check: {nfiles} files, {lines} lines in {elapsed:.2f} s "
              f"({rate:,.0f} lines/s)", file=sys.stderr)
    if any(f.code == INTERNAL_ERROR for f in findings):
        return 2
    return 1 if findings and not args.exit_zero else 0
