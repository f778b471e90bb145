#!/usr/bin/env python
"""The stand-in's real-program tier (issue 27): is `samedevice run` a faithful CUDA machine?

For every program under `benchmarks/programs/` (unmodified public programs, each at a named
commit under its own license; see that folder's README) this runs, in fresh copies:

1. the correct program under `samedevice run` (the simulated GPU machine);
2. the same program under `samedevice run --cpu` (the plain-CPU reference run);
3. the program with its first injected device bug, under `samedevice run`.

and prints one row per program:

- **equal**: both correct runs exit 0 and their stdout is identical after the program's `mask`
  regexes (timings, throughput and unseeded randomness) and after deleting the `, device='cuda:0'`
  that a printed GPU tensor carries (its repr on CUDA; the reference run's tensors are CPU
  tensors): the stand-in took the path and computed the numbers the CPU computes;
- **ratio**: wall time of run 1 over run 2 (both include interpreter and torch start-up);
- **bug**: the bug raised a CUDA device error (the template the diagnosis read from it, and the
  error's text), and the traceback's innermost frame is the program's own line (not a frame of
  samedevice's).

    python benchmarks/standin_programs.py [--only NAME] [--python PY] [--jobs N] [--json]

`--python` runs another interpreter's `-m samedevice` (a venv with a CUDA wheel of torch). Exit
status 1 when a row is not equal or its bug did not raise as CUDA does; progress goes to stderr.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_programs import device_error_line, load_programs, masked, prepare, samedevice

# `  File "/tmp/sd-x/run/gat/main.py", line 119, in forward`
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')


# what a printed CUDA tensor has and the same CPU tensor lacks: `tensor([1, 2], device='cuda:0')`
_TENSOR_DEVICE = re.compile(r",\s*device='cuda:\d+'")


def comparable(stdout: str, masks: list[str]) -> str:
    return _TENSOR_DEVICE.sub("", masked(stdout, masks))


def first_bug(prog: dict) -> dict | None:
    bugs = prog.get("bugs", [])
    return next((b for b in bugs if b.get("source") == "injected"), bugs[0] if bugs else None)


def innermost_program_frame(stderr: str, run: Path) -> tuple[str, int] | None:
    """The last traceback frame inside the program's copy, as (path relative to it, line)."""
    hit = None
    root = str(run.resolve())
    for line in stderr.splitlines():
        m = _FRAME.match(line)
        if m and str(Path(m["path"]).resolve()).startswith(root + "/"):
            hit = (str(Path(m["path"]).resolve().relative_to(root)), int(m["line"]))
    return hit


def samedevice_frames(stderr: str) -> list[str]:
    """Traceback frames in samedevice's own files: a faithful stand-in shows none."""
    return [line.strip() for line in stderr.splitlines()
            if _FRAME.match(line) and "/samedevice/" in line.replace("\\", "/")]


def run_correct(python: str, prog: dict, extra: list[str]) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"sd-standin-{prog['name']}-"))
    try:
        source = "fixed" if (prog["_dir"] / "fixed").is_dir() else "upstream"
        run, cwd = prepare(prog, source, tmp)
        return samedevice(python, prog, run, cwd, extra)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_bug(python: str, prog: dict, bug: dict) -> dict:
    import subprocess

    tmp = Path(tempfile.mkdtemp(prefix=f"sd-standin-{prog['name']}-bug-"))
    try:
        run, cwd = prepare(prog, "upstream", tmp)
        if bug.get("patch"):
            with open(prog["_dir"] / bug["patch"]) as f:
                subprocess.run(["patch", "-p1", "-s", "-d", str(run)], stdin=f, check=True,
                               capture_output=True, text=True)
        dj = tmp / "d.json"
        r = samedevice(python, prog, run, cwd, ["--diagnosis-json", str(dj)])
        diag = json.loads(dj.read_text()) if dj.exists() else {}
        return {"rc": r["rc"], "seconds": r["seconds"], "error": device_error_line(r["stderr"]),
                "template": diag.get("template"), "frame": innermost_program_frame(r["stderr"], run),
                "own_frames": samedevice_frames(r["stderr"]), "tail": r["stderr"][-1200:]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(python: str, prog: dict) -> dict:
    masks = prog.get("mask", [])
    sim = run_correct(python, prog, [])
    cpu = run_correct(python, prog, ["--cpu"])
    row: dict = {"program": prog["name"], "repo": prog["repo"], "sim_rc": sim["rc"], "cpu_rc": cpu["rc"],
                 "sim_s": sim["seconds"], "cpu_s": cpu["seconds"]}
    row["equal"] = (sim["rc"] == 0 and cpu["rc"] == 0
                    and comparable(sim["stdout"], masks) == comparable(cpu["stdout"], masks))
    row["ratio"] = round(sim["seconds"] / cpu["seconds"], 2) if cpu["seconds"] else None
    if not row["equal"]:
        import difflib
        row["diff"] = "".join(list(difflib.unified_diff(
            comparable(cpu["stdout"], masks).splitlines(True), comparable(sim["stdout"], masks).splitlines(True),
            "run --cpu", "run", n=1))[:30]) or (sim["stderr"] if sim["rc"] else cpu["stderr"])[-1500:]
    bug = first_bug(prog)
    if bug is not None:
        b = run_bug(python, prog, bug)
        row["bug"] = bug["id"]
        row["bug_error"], row["bug_template"] = b["error"], b["template"]
        row["bug_frame"] = f"{b['frame'][0]}:{b['frame'][1]}" if b["frame"] else None
        row["bug_ok"] = (b["rc"] not in (0, "timeout") and bool(b["error"]) and bool(b["template"])
                         and b["frame"] is not None and not b["own_frames"])
        if not row["bug_ok"]:
            row["bug_detail"] = {"rc": b["rc"], "own_frames": b["own_frames"][:3], "tail": b["tail"]}
    row["ok"] = row["equal"] and row.get("bug_ok", False)
    return row


def table(rows: list[dict]) -> str:
    head = f"{'program':<42} {'equal':>5} {'ratio':>6}  bug (template: text, at)"
    out = [head, "-" * len(head)]
    for r in rows:
        text = (r.get("bug_error") or "NO DEVICE ERROR")[:90]
        bug = f"{r.get('bug_template') or '-'}: {text}, at {r.get('bug_frame')}"
        if not r.get("bug_ok"):
            bug = "FAIL " + bug
        out.append(f"{r['program']:<42} {'yes' if r['equal'] else 'NO':>5} {r['ratio'] or '-':>6}  {bug}")
    n = len(rows)
    out.append(f"equal {sum(r['equal'] for r in rows)}/{n}; bug raised as on CUDA "
               f"{sum(bool(r.get('bug_ok')) for r in rows)}/{n}; both {sum(r['ok'] for r in rows)}/{n}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", help="a program's name (repeatable)")
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter that runs `-m samedevice` (default: this one)")
    ap.add_argument("--jobs", type=int, default=2, help="programs measured at once (default 2)")
    ap.add_argument("--json", action="store_true", help="print every row as JSON after the table")
    args = ap.parse_args(argv)
    progs = load_programs(args.only)
    if not progs:
        print("standin_programs: no such program", file=sys.stderr)
        return 2
    t0 = time.time()
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = {ex.submit(measure, args.python, p): p for p in progs}
        for i, fut in enumerate(concurrent.futures.as_completed(futs), 1):
            row = fut.result()
            rows.append(row)
            print(f"[{i}/{len(progs)}] {time.time() - t0:5.0f}s {row['program']}: "
                  f"{'ok' if row['ok'] else 'NOT OK'}", file=sys.stderr, flush=True)
    order = {p["name"]: i for i, p in enumerate(progs)}
    rows.sort(key=lambda r: order[r["program"]])
    print(table(rows))
    print(f"python: {args.python}; wall time {time.time() - t0:.0f} s with {args.jobs} jobs")
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
