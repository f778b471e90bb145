"""Seconds per case for ``samedevice verify -j 2``: warm interpreters beside fresh ones.

Runs the real command twice in this one run, on the same cases and the same machine, one after
the other: as ``make test`` runs it (one warm interpreter per job, every program in a fork)
and with ``--cold`` (today's former way: a fresh ``python`` per program, each importing
torch). On a shared machine absolute seconds move with the load; the ratio measured side by
side is the figure to compare. Goal: 1.5 s a case on 2 cores.

Run: ``.venv/bin/python benchmarks/verify_speed.py [-j 2] [--rounds 1] [SLUG ...]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

GOAL_S = 1.5
ROOT = Path(__file__).resolve().parent.parent


def timed_verify(slugs: list[str], jobs: int, cold: bool) -> float:
    cmd = [sys.executable, "-m", "samedevice", "verify", "-j", str(jobs), *(["--cold"] if cold else []),
           *slugs]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"verify_speed: `{' '.join(cmd[1:])}` failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help="cases (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1, help="warm/cold pairs to run (default 1)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from samedevice.cases import get_case, load_cases

    cases = [get_case(s) for s in args.slugs] if args.slugs else list(load_cases())
    slugs = [c.slug for c in cases]
    dist = sum(c.verify == "dist" for c in cases)
    print(f"samedevice verify -j {args.jobs}: {len(slugs)} cases ({dist} start ranks of their own), "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
    warm_times, cold_times = [], []
    for r in range(args.rounds):
        for cold in (False, True):
            seconds = timed_verify(slugs, args.jobs, cold)
            (cold_times if cold else warm_times).append(seconds)
            print(f"  round {r + 1} {'cold (--cold)' if cold else 'warm':<14} {seconds:7.1f} s  "
                  f"{seconds / len(slugs):5.2f} s/case", flush=True)
    warm, cold = min(warm_times), min(cold_times)
    print(f"\nwarm: {warm / len(slugs):.2f} s a case (goal {GOAL_S} s); "
          f"cold: {cold / len(slugs):.2f} s a case; cold/warm {cold / warm:.1f}x "
          f"(best of {args.rounds}, load now {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
