#!/usr/bin/env python
"""The run benchmark (issue 25): `samedevice run` on real programs with a real or injected device bug.

For every program under `benchmarks/programs/<name>/program.json` and every bug it lists:
copy `upstream/` to a temporary folder, run the program's setup (synthetic data), apply the
bug's patch, run `<python> -m samedevice run --gpus N --diagnosis-json d.json SCRIPT ARGS` in
the program's cwd, and score

- **raised**: the run exited non-zero and wrote a diagnosis;
- **named**: the diagnosis's `culprit.expr` is one of the bug's accepted expressions and the
  line of `culprit.made_at` (`PATH:LINE  code`; PATH matched by file-name suffix) lies in the
  bug's `culprit.lines`.

For every program also the clean runs: the correct program (`upstream/`, or `fixed/` for a
real bug) under `samedevice run` and under `samedevice run --no-diagnosis`: both exit 0, the
first prints no line starting with `samedevice:` on stderr, and their stdout is identical after
the program's `mask` regexes.

Halves: a (program, bug) pair is `tune` when the last hex digit of sha256("<name>/<bug id>") is
even, else `check`; a program's clean run by sha256("<name>").

    python benchmarks/run_programs.py [--split tune|check|all] [--only NAME] [--list] [--json]
    PYTHONPATH=/work/firstsight/src python benchmarks/run_programs.py   # the frozen engine
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"

# The exception texts of a device error (CUDA's wording; ../../shared/taxonomy.md T1-T13). Used
# only to tell whether a bug's run raised a device error at all, whatever the diagnosis says.
DEVICE_ERROR = re.compile(
    r"Expected all tensors to be on the same device"
    r"|should be the same|Expected object of (device type|backend)"
    r"|is on CPU, but expected|expected it to be on GPU"
    r"|indices should be either on cpu or on the same device"
    r"|No backend type associated with device type"
    r"|Tensors must be CUDA and dense"
    r"|Expected a '\w+' device type for generator"
    r"|module must have its parameters and buffers on device"
    r"|Attempting to deserialize object on a CUDA device"
    r"|can't convert cuda:\d+ device type tensor to numpy"
    r"|tensors are not at the same device"
    r"|All input tensors must be on the same device"
    r"|Tensor device mismatch"
    r"|device_ids .* module parameters"
    r"|Expected .*(cuda|cpu).* but (got|found) .*(cuda|cpu)"
    r"|must be on the same device|on the same device as|to be on the same device"
    r"|to be on (the )?(CUDA|cuda|GPU|CPU|cpu)",
)


def half(key: str) -> str:
    return "tune" if int(hashlib.sha256(key.encode()).hexdigest()[-1], 16) % 2 == 0 else "check"


def load_programs(only: list[str] | None) -> list[dict]:
    progs = []
    for pj in sorted(PROGRAMS.glob("*/program.json")):
        prog = json.loads(pj.read_text())
        prog["_dir"] = pj.parent
        prog.setdefault("name", pj.parent.name)
        if only and prog["name"] not in only and pj.parent.name not in only:
            continue
        progs.append(prog)
    return progs


def _env() -> dict:
    env = dict(os.environ)
    # two or more torch processes on a small machine: one thread each is several times faster
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("PYTHONHASHSEED", "0")
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    env.pop("SAMEDEVICE_DOCS_URL", None)
    return env


def prepare(prog: dict, source: str, tmp: Path) -> tuple[Path, Path]:
    """Copy the program's `source` folder (upstream or fixed) to tmp/run and run its setup."""
    run = tmp / "run"
    shutil.copytree(prog["_dir"] / source, run, symlinks=False)
    cwd = run / prog.get("cwd", ".")
    cwd.mkdir(parents=True, exist_ok=True)
    setup = prog.get("setup")
    if setup:
        proc = subprocess.run(
            [sys.executable, str(prog["_dir"] / setup)], cwd=cwd, env=_env(),
            capture_output=True, text=True, timeout=600,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"setup {setup} failed: {proc.stderr[-2000:]}")
    return run, cwd


# Multi-GPU programs start process groups on fixed ports (MASTER_PORT is in their code): run one at a time.
_MULTI_GPU = threading.Lock()


def samedevice(python: str, prog: dict, run: Path, cwd: Path, extra: list[str]) -> dict:
    if int(prog.get("gpus", 1)) > 1:
        with _MULTI_GPU:
            return _samedevice(python, prog, run, cwd, extra)
    return _samedevice(python, prog, run, cwd, extra)


def _samedevice(python: str, prog: dict, run: Path, cwd: Path, extra: list[str]) -> dict:
    script = os.path.relpath(run / prog["script"], cwd)
    cmd = [python, "-m", "samedevice", "run", "--gpus", str(prog.get("gpus", 1)), *extra,
           script, *[str(a) for a in prog.get("args", [])]]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True,
                              timeout=prog.get("timeout", 300))
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        def _s(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        rc, out, err = "timeout", _s(e.stdout), _s(e.stderr)
    return {"rc": rc, "stdout": out, "stderr": err, "seconds": round(time.time() - t0, 1)}


def parse_made_at(made_at: str | None) -> tuple[str | None, int | None]:
    if not made_at:
        return None, None
    m = re.match(r"^(.*?):(\d+)(?:\s|$)", made_at)
    if not m:
        return None, None
    return m.group(1), int(m.group(2))


def path_matches(path: str, cwd: Path, want: str) -> bool:
    p = Path(os.path.normpath(os.path.join(cwd, path))).as_posix()
    want = Path(os.path.normpath(want)).as_posix()
    return p == want or p.endswith("/" + want)


def device_error_line(stderr: str) -> str | None:
    """The last line of stderr that reads as a device error (independent of any diagnosis)."""
    hit = None
    for line in stderr.splitlines():
        if line.startswith("samedevice:") or line.startswith("  "):
            continue
        if DEVICE_ERROR.search(line) and re.search(r"(Error|Exception)\b:? |^\w+: ", line):
            hit = line.strip()
    return hit


def run_bug(python: str, prog: dict, bug: dict, keep: bool) -> dict:
    name = prog["name"]
    res = {"program": name, "bug": bug["id"], "half": half(f"{name}/{bug['id']}"),
           "family": bug.get("family"), "source": bug.get("source")}
    tmp = Path(tempfile.mkdtemp(prefix=f"sd-{name}-{bug['id']}-"))
    try:
        run, cwd = prepare(prog, "upstream", tmp)
        if bug.get("patch"):
            with open(prog["_dir"] / bug["patch"]) as f:
                p = subprocess.run(["patch", "-p1", "-s", "-d", str(run)], stdin=f,
                                   capture_output=True, text=True)
            if p.returncode != 0:
                res.update(error=f"patch failed: {p.stdout}{p.stderr}", raised=False, named=False)
                return res
        dj = tmp / "d.json"
        r = samedevice(python, prog, run, cwd, ["--diagnosis-json", str(dj)])
        res["rc"], res["seconds"] = r["rc"], r["seconds"]
        res["device_error"] = device_error_line(r["stderr"])
        diag = None
        if dj.exists():
            try:
                diag = json.loads(dj.read_text())
            except ValueError:
                diag = None
        res["raised"] = r["rc"] != 0 and diag is not None
        culprit = (diag or {}).get("culprit") or {}
        want = bug["culprit"]
        exprs = want["expr"] if isinstance(want["expr"], list) else [want["expr"]]
        path, line = parse_made_at(culprit.get("made_at"))
        lo, hi = want["lines"]
        res["expr_ok"] = culprit.get("expr") in exprs
        res["line_ok"] = (path is not None and path_matches(path, cwd, want["file"])
                          and lo <= line <= hi)
        res["named"] = bool(res["raised"] and res["expr_ok"] and res["line_ok"])
        res["diagnosis"] = None if diag is None else {
            "template": diag.get("template"), "family": diag.get("family"),
            "at": f"{diag.get('path')}:{diag.get('line')}", "statement": diag.get("statement"),
            "culprit_expr": culprit.get("expr"), "made_at": culprit.get("made_at"),
            "kind": culprit.get("kind"), "open": diag.get("open"),
        }
        if diag is not None and diag.get("path"):
            res["diagnosis"]["at"] = (os.path.relpath(diag["path"], run)
                                      if os.path.isabs(diag["path"]) else diag["path"]) + \
                f":{diag.get('line')}"
        if culprit.get("made_at") and path:
            rel = os.path.relpath(os.path.normpath(os.path.join(cwd, path)), run)
            res["diagnosis"]["made_at"] = rel + culprit["made_at"][len(path):]
        res["want"] = f"{' | '.join(exprs)} @ {want['file']}:{lo}-{hi}"
        if not res["raised"]:
            res["tail"] = r["stderr"][-1500:]
        return res
    except Exception as e:  # a benchmark defect: report it, never hide it
        res.update(error=f"{type(e).__name__}: {e}", raised=False, named=False)
        return res
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            res["tmp"] = str(tmp)


def masked(text: str, masks: list[str]) -> str:
    for m in masks:
        text = re.sub(m, "", text, flags=re.M)
    return text


def run_clean(python: str, prog: dict, keep: bool) -> dict:
    name = prog["name"]
    res = {"program": name, "half": half(name)}
    source = "fixed" if (prog["_dir"] / "fixed").is_dir() else "upstream"
    res["source"] = source
    runs = {}
    tmps = []
    try:
        for key, extra in (("diagnosis", []), ("plain", ["--no-diagnosis"])):
            tmp = Path(tempfile.mkdtemp(prefix=f"sd-{name}-clean-"))
            tmps.append(tmp)
            run, cwd = prepare(prog, source, tmp)
            runs[key] = samedevice(python, prog, run, cwd, extra)
        d, p = runs["diagnosis"], runs["plain"]
        masks = prog.get("mask", [])
        res["rc"] = [d["rc"], p["rc"]]
        res["seconds"] = [d["seconds"], p["seconds"]]
        res["exit0"] = d["rc"] == 0 and p["rc"] == 0
        sd_lines = [ln for ln in d["stderr"].splitlines() if ln.startswith("samedevice:")]
        res["quiet"] = not sd_lines
        res["same_stdout"] = masked(d["stdout"], masks) == masked(p["stdout"], masks)
        res["ok"] = res["exit0"] and res["quiet"] and res["same_stdout"]
        if not res["ok"]:
            res["detail"] = {
                "samedevice_lines": sd_lines[:5],
                "stderr_tail": (d["stderr"] if d["rc"] != 0 else p["stderr"])[-1500:],
            }
            if not res["same_stdout"]:
                import difflib
                res["detail"]["stdout_diff"] = "".join(list(difflib.unified_diff(
                    masked(p["stdout"], masks).splitlines(True),
                    masked(d["stdout"], masks).splitlines(True), "no-diagnosis", "run", n=1))[:40])
        return res
    except Exception as e:
        res.update(error=f"{type(e).__name__}: {e}", ok=False)
        return res
    finally:
        for tmp in tmps:
            if not keep:
                shutil.rmtree(tmp, ignore_errors=True)
        if keep:
            res["tmp"] = [str(t) for t in tmps]


def pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100.0 * a / b:.1f}%)" if b else "0/0"


def summary(bugs: list[dict], cleans: list[dict], split: str) -> str:
    rows = []
    halves = ["tune", "check"] if split == "all" else [split]
    if split == "all":
        halves.append("all")
    head = f"{'half':<6} {'pairs':>5} {'device error raised':>22} {'named':>18} {'clean programs':>18}"
    rows.append(head)
    rows.append("-" * len(head))
    for h in halves:
        bs = [b for b in bugs if h == "all" or b["half"] == h]
        cs = [c for c in cleans if h == "all" or c["half"] == h]
        raised = sum(1 for b in bs if b.get("raised"))
        named = sum(1 for b in bs if b.get("named"))
        ok = sum(1 for c in cs if c.get("ok"))
        rows.append(f"{h:<6} {len(bs):>5} {pct(raised, len(bs)):>22} {pct(named, len(bs)):>18} "
                    f"{pct(ok, len(cs)):>18}")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=["tune", "check", "all"], default="all")
    ap.add_argument("--only", action="append", help="a program's name (repeatable)")
    ap.add_argument("--wave", type=int, help="only the bugs of this wave (a bug's `wave`, 1 when absent); no clean runs")
    ap.add_argument("--bug", action="append", help="a bug's id (repeatable): only those pairs, no clean runs")
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter that runs `-m samedevice` (default: this one)")
    ap.add_argument("--json", action="store_true", help="print every result as JSON")
    ap.add_argument("--list", action="store_true", help="one line per pair and clean program")
    ap.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)),
                    help="runs in parallel (default: the CPU count, at most 4)")
    ap.add_argument("--no-clean", action="store_true", help="skip the clean runs")
    ap.add_argument("--no-bugs", action="store_true", help="skip the bug runs")
    ap.add_argument("--keep", action="store_true", help="keep the temporary run folders")
    ap.add_argument("--save", metavar="FILE", help="also write every result as JSON into FILE")
    ap.add_argument("--blind", action="store_true",
                    help="while building the benchmark: show only whether each bug raised a device "
                         "error and its text, never what the diagnosis said")
    args = ap.parse_args(argv)

    t0 = time.time()
    progs = load_programs(args.only)
    if not progs:
        print("no programs", file=sys.stderr)
        return 2
    tasks = []
    for prog in progs:
        if not args.no_bugs:
            for bug in prog.get("bugs", []):
                if args.bug and bug["id"] not in args.bug:
                    continue
                if args.wave is not None and bug.get("wave", 1) != args.wave:
                    continue
                if args.split in ("all", half(f"{prog['name']}/{bug['id']}")):
                    tasks.append(("bug", prog, bug))
        if not args.no_clean and not args.bug and args.wave is None and args.split in ("all", half(prog["name"])):
            tasks.append(("clean", prog, None))
    bugs, cleans = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = {}
        for kind, prog, bug in tasks:
            if kind == "bug":
                futs[ex.submit(run_bug, args.python, prog, bug, args.keep)] = (kind, prog, bug)
            else:
                futs[ex.submit(run_clean, args.python, prog, args.keep)] = (kind, prog, bug)
        done = 0
        for fut in concurrent.futures.as_completed(futs):
            kind, prog, bug = futs[fut]
            res = fut.result()
            done += 1
            if kind == "bug":
                bugs.append(res)
                mark = ("device error" if res.get("device_error") else "NO DEVICE ERROR") if args.blind else \
                    "named" if res.get("named") else ("raised" if res.get("raised") else "NO DIAGNOSIS")
                what = f"{prog['name']}/{bug['id']}"
            else:
                cleans.append(res)
                mark = "clean ok" if res.get("ok") else "CLEAN FAIL"
                what = f"{prog['name']} (clean)"
            extra = f" [{res['error']}]" if res.get("error") else ""
            print(f"[{done}/{len(tasks)}] {time.time() - t0:6.0f}s {what}: {mark}{extra}",
                  file=sys.stderr, flush=True)
    order = {p["name"]: i for i, p in enumerate(progs)}
    bugs.sort(key=lambda b: (order[b["program"]], b["bug"]))
    cleans.sort(key=lambda c: order[c["program"]])
    wall = time.time() - t0

    if args.save:
        with open(args.save, "w") as f:
            json.dump({"bugs": bugs, "clean": cleans, "wall_s": round(wall, 1), "python": args.python,
                       "pythonpath": os.environ.get("PYTHONPATH", ""),
                       "table": summary(bugs, cleans, args.split)}, f, indent=1)
    if args.blind:
        for b in bugs:
            print(f"{'device-error' if b.get('device_error') else 'NO DEVICE ERROR'} {b['program']}/{b['bug']}"
                  f" rc={b.get('rc')} {b.get('seconds')}s: {b.get('device_error') or b.get('error') or (b.get('tail') or '')[-600:]}")
        for c in cleans:
            print(f"{'clean-ok' if c.get('ok') else 'clean-FAIL'} {c['program']} {c.get('seconds')}s"
                  + ("" if c.get("ok") else f" {json.dumps({k: c.get(k) for k in ('error', 'rc', 'quiet', 'same_stdout', 'detail')})[:3000]}"))
        print(f"wall time {wall:.0f} s")
        return 0
    if args.json:
        print(json.dumps({"bugs": bugs, "clean": cleans, "wall_s": round(wall, 1),
                          "table": summary(bugs, cleans, args.split)}, indent=1))
        return 0
    if args.list:
        for b in bugs:
            d = b.get("diagnosis") or {}
            state = "named " if b.get("named") else ("missed" if b.get("raised") else "NODIAG")
            said = (f"culprit {d.get('culprit_expr')!r} made at {d.get('made_at')!r}"
                    if d.get("culprit_expr") else f"no culprit (open: {d.get('open')!r})"
                    if d else (b.get("error") or f"rc={b.get('rc')} error={b.get('device_error')!r}"))
            print(f"{state} {b['half']:<5} {b['program']}/{b['bug']} [{b.get('family')}] "
                  f"want {b.get('want')}; at {d.get('at')}: {said}")
        for c in cleans:
            state = "clean-ok  " if c.get("ok") else "clean-FAIL"
            why = "" if c.get("ok") else f" {c.get('error') or ''} rc={c.get('rc')} quiet={c.get('quiet')} same_stdout={c.get('same_stdout')}"
            print(f"{state} {c['half']:<5} {c['program']} ({c.get('source')}) {c.get('seconds')}s{why}")
        print()
    print(summary(bugs, cleans, args.split))
    print(f"programs: {len(progs)}; wall time {wall:.0f} s with {args.jobs} jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
