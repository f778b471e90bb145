"""How fast ``samedevice check`` reads real code: the installed ``torch/`` package.

    .venv/bin/python benchmarks/check_speed.py [--jobs N] [PATH]

Prints files, lines, findings, seconds and lines per second with ``--jobs`` processes (default
2, the CI machine's cores), and, side by side on the same files and processes, the time of
``ast.parse`` alone: the ratio says what the rules cost on top of parsing, whatever else the
machine is doing. Goal: the whole ``torch/`` tree in under 30 s on 2 cores. The checker imports
no torch; the package is only located.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import resource
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from samedevice.check import runner


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", help="folder to check (default: the installed torch/)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--serial", action="store_true", help="also time one process")
    args = p.parse_args()
    if args.path:
        root = Path(args.path)
    else:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.origin:
            print("check_speed: torch is not installed; pass a PATH", file=sys.stderr)
            return 2
        root = Path(spec.origin).parent
    files = runner.collect([str(root)], [])
    print(f"{root}: {len(files)} files; {os.cpu_count()} CPUs visible, "
          f"load average {os.getloadavg()[0]:.1f}")
    for jobs in ([1] if args.serial else []) + [args.jobs]:
        t0 = time.perf_counter()
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            parsed = sum(pool.map(_parse, [str(f) for f in files], chunksize=20))
        t_parse = time.perf_counter() - t0
        t0, cpu0 = time.perf_counter(), _cpu()
        findings, lines = runner.check_files(files, None, jobs=jobs)
        dt, cpu = time.perf_counter() - t0, _cpu() - cpu0
        codes = Counter(f.code for f in findings)
        print(f"jobs={jobs}: check {lines:,} lines in {dt:.1f} s = {lines / dt:,.0f} lines/s; "
              f"{len(findings)} findings {dict(sorted(codes.items()))}")
        # on a shared machine the wall time is mostly waiting: the CPU time says what the same
        # run takes on `jobs` idle cores
        print(f"jobs={jobs}: {cpu:.1f} CPU-seconds (all processes) = {lines / cpu:,.0f} lines per "
              f"CPU-second; about {cpu / jobs:.1f} s on {jobs} idle cores")
        print(f"jobs={jobs}: ast.parse alone {parsed:,} lines in {t_parse:.1f} s; "
              f"check / parse = {dt / t_parse:.2f}")
    return 0


def _cpu() -> float:
    """User + system CPU time of this process and its finished children (the pool's workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _parse(path: str) -> int:
    text = Path(path).read_bytes().decode("utf-8", "replace")
    try:
        ast.parse(text)
    except SyntaxError:
        pass
    return text.count("\n")


if __name__ == "__main__":
    raise SystemExit(main())
