"""Proving a case: the broken program fails as documented, the fixed one computes what the CPU does.

For a case verified on the simulated accelerator (``verify = "sim"`` or ``"dist"``):

1. ``broken.py`` runs with the simulated device answering to "cuda". It must end with the
   exception type and the *exact* message the case's metadata records for this torch version
   (which pins the template, the op or wrapper, the argument and the device pair), and it
   must have put tensors on the accelerator.
2. ``fixed.py`` runs the same way and must finish; it runs again on the plain CPU ("cuda"
   read as "cpu"), and every tensor, module state and number it left behind must match
   (``torch.testing.assert_close``).

``verify = "cpu"`` cases (environment bugs) run both programs in a CPU-only PyTorch (the CPU
wheel as it is; a CUDA wheel with its CUDA hidden, see ``sim._cpu_build``); ``"gpu-only"`` cases are skipped with their stated reason. With ``real=True`` the
programs run unchanged on a real CUDA device (the GPU tier), or are skipped where none exists.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from samedevice.cases import Case, case_message_text

if TYPE_CHECKING:
    from samedevice.sim.runner import RunResult

    from .page import PageRun

    # run_script's signature: (script, mode, timeout, workdir=None, extra_env=None)
    Runner = Callable[..., RunResult]

PASS, FAIL, SKIP = "pass", "fail", "skip"
RTOL, ATOL = 1.3e-6, 1e-5  # LSTM/GRU cells differ from the CPU path by ~5e-7


@dataclass
class CaseResult:
    case: Case
    status: str
    checks: list[str] = field(default_factory=list)  # what was proved, in words
    problems: list[str] = field(default_factory=list)  # why it failed
    reason: str = ""  # why it was skipped
    seconds: float = 0.0
    device: str = "sim"
    torch_version: str = ""
    gpu: str | None = None
    page: Any = None  # the page as this run executed it (when verify ran the page)

    def to_dict(self) -> dict[str, Any]:
        return {
            "slug": self.case.slug,
            "id": self.case.id,
            "status": self.status,
            "checks": self.checks,
            "problems": self.problems,
            "reason": self.reason,
            "seconds": round(self.seconds, 2),
            "device": self.device,
            "torch": self.torch_version,
            "gpu": self.gpu,
        }

    def record(self) -> dict[str, Any]:
        """The verification record kept in ``cases/<slug>.verified.json``."""
        return {
            "date": date.today().isoformat(),
            "torch": self.torch_version,
            "device": self.device,
            "gpu": self.gpu,
            "result": self.status,
            "python": platform.python_version(),
            "checks": self.checks,  # what the run proved, in words (shown on the page)
        }


def _torch_version() -> str:
    import torch

    return torch.__version__


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


def _gpu_name() -> str | None:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return None


def check_error(case: Case, exc: dict[str, Any] | None, torch_version: str) -> list[str]:
    """Problems with how the broken program ended (empty when it failed as documented)."""
    expected = case.error.message_for(torch_version)
    if expected is None:
        raised = f"; it raised {exc['type']}: {case_message_text(exc['message'])}" if exc else ""
        return [f"the case records no message for torch {torch_version} (add an era to "
                f"error.messages){raised}"]
    if exc is None:
        return ["broken.py finished without an error"]
    problems = []
    if exc["type"] != case.error.exception:
        problems.append(f"raised {exc['type']}, expected {case.error.exception}")
    got, want = case_message_text(exc["message"]), case_message_text(expected.text)
    if got != want:
        problems.append(f"message differs:\n    expected: {want}\n    got:      {got}")
    return problems


def compare_values(sim_values: dict[str, Any], cpu_values: dict[str, Any]) -> tuple[list[str], int]:
    """Problems between the simulated and the CPU run's leftovers, and how many tensors matched."""
    import torch

    problems: list[str] = []
    count = 0

    def walk(name: str, a: Any, b: Any) -> None:
        nonlocal count
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            try:
                torch.testing.assert_close(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
                count += 1
            except AssertionError as e:
                problems.append(f"{name}: {str(e).splitlines()[0]}")
        elif isinstance(a, dict) and isinstance(b, dict):
            if set(a) != set(b):
                problems.append(f"{name}: keys differ ({sorted(map(str, set(a) ^ set(b)))})")
            for k in set(a) & set(b):
                walk(f"{name}[{k!r}]", a[k], b[k])
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                problems.append(f"{name}: lengths differ ({len(a)} vs {len(b)})")
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                walk(f"{name}[{i}]", x, y)
        elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if abs(a - b) > ATOL + RTOL * abs(b):
                problems.append(f"{name}: {a} != {b}")
        elif a is None and b is None:
            pass
        else:
            problems.append(f"{name}: {type(a).__name__} vs {type(b).__name__}")

    for name in sorted(set(sim_values) | set(cpu_values)):
        if name not in sim_values or name not in cpu_values:
            problems.append(f"{name}: left by only one of the runs")
            continue
        walk(name, sim_values[name], cpu_values[name])
    return problems, count


def stale_page_problem(case: Case, stale: list[str]) -> str:
    """One line: the stale page, the programs that changed, the command that regenerates it."""
    files = " and ".join(f"snippets/{case.slug}/{name}" for name in stale)
    return (f"page: cases/{case.slug}.ipynb is stale ({files} changed since the page was made "
            f"from it); regenerate it: samedevice notebook {case.slug}")


def _page_cells(case: Case) -> tuple[int, int] | None:
    """The broken and fixed programs' cells on the case's page (None: no page to run)."""
    if not case.notebook_path.exists():
        return None
    import nbformat

    from .page import program_cells

    broken, fixed = program_cells(nbformat.read(case.notebook_path, as_version=4), case.slug)
    return None if broken is None or fixed is None else (broken, fixed)


def _raised(exc: dict[str, Any] | None) -> dict[str, Any] | None:
    """A rank's or DataLoader worker's own exception when the page's spawn or loader re-raised
    it (as ``RunResult.exception``)."""
    from samedevice.sim.runner import _innermost, is_wrapped

    if exc and is_wrapped(exc.get("type", ""), exc.get("message", "")):
        return _innermost(exc)
    return exc


def verify_case(case: Case, *, real: bool = False, broken: Path | None = None,
                fixed: Path | None = None, timeout: float = 300.0,
                runner: Runner | None = None, page_runner: Callable[..., PageRun] | None = None
                ) -> CaseResult:
    """Prove one case. ``broken``/``fixed`` override the snippet paths (used by tests);
    ``runner`` runs each program (default: a fresh interpreter per program, ``run_script``);
    ``page_runner`` (``WarmRunner.run_page``) runs the case's page instead of the two
    programs, which then also yields the page's fresh outputs (``CaseResult.page``)."""
    import time

    from samedevice.sim.runner import run_script

    run = runner or run_script

    broken = broken or case.broken_path
    fixed = fixed or case.fixed_path
    torch_version = _torch_version()
    start = time.perf_counter()
    if broken == case.broken_path and fixed == case.fixed_path:
        stale = case.stale_programs()
        if stale:
            # The page is the proof (its cells hold the programs and ran them), so a page made
            # from other programs than the files would pass for code that never ran.
            return CaseResult(case, FAIL, problems=[stale_page_problem(case, stale)],
                              torch_version=torch_version, device="cuda" if real else "sim")
    extra_env: dict[str, str] = {}
    if real:
        gpu = _gpu_name()
        result = CaseResult(case, SKIP, device="cuda", torch_version=torch_version, gpu=gpu)
        if gpu is None:
            result.reason = "no CUDA device on this machine"
            return result
        if _gpu_count() < case.devices_needed:
            result.reason = f"needs {case.devices_needed} GPUs, this machine has {_gpu_count()}"
            return result
        run_mode, ref_mode = "plain", "cpu"
        if case.verify == "cpu":
            # An environment bug of CPU-only PyTorch builds ("Torch not compiled with CUDA
            # enabled"). A CUDA build with its GPU hidden says something else (on the H200
            # tier, 2026-11-28: "RuntimeError: No CUDA GPUs are available"), so a GPU machine,
            # whose torch is a CUDA build, cannot reproduce it.
            result.reason = (f"an environment bug of CPU-only PyTorch builds; torch {torch_version} "
                             "here is a CUDA build")
            return result
    elif case.verify == "gpu-only":
        return CaseResult(case, SKIP, reason=f"GPU-only: {case.verify_reason}",
                          torch_version=torch_version)
    elif case.verify == "cpu":
        result = CaseResult(case, SKIP, device="cpu", torch_version=torch_version)
        # a CPU-only build, also where this torch is a CUDA wheel without a GPU (see _cpu_build)
        run_mode, ref_mode = "cpu-build", None
    else:
        result = CaseResult(case, SKIP, device="sim", torch_version=torch_version)
        run_mode, ref_mode = "cuda", "cpu"
        # the simulated machine has as many GPUs as the case needs (one by default), so
        # `cuda:1` and `torch.cuda.set_device(rank)` work where two GPUs would
        extra_env["SAMEDEVICE_GPUS"] = str(max(1, case.devices_needed))

    cells = None
    if page_runner is not None and not real and broken == case.broken_path and fixed == case.fixed_path:
        cells = _page_cells(case)
    if cells is not None:
        # The page is the proof: its failing cell is the broken program's run, its fix cell
        # the fixed program's (one execution serves verify and the page test).
        assert page_runner is not None
        page = page_runner(case.notebook_path, *cells, mode=run_mode, timeout=timeout,
                           extra_env=extra_env)
        result.page = page.notebook
        bad_exception, bad_usage, bad_timed_out = _raised(page.broken_exception), page.broken_usage, page.timed_out
    else:
        bad = run(broken, run_mode, timeout, extra_env=extra_env)
        bad_exception, bad_usage, bad_timed_out = bad.exception, bad.usage, bad.timed_out
    problems = check_error(case, bad_exception, torch_version)
    if bad_timed_out:
        problems.insert(0, f"broken.py timed out after {timeout:.0f} s")
    if run_mode == "cuda" and bad_usage == 0:
        problems.append("broken.py never used the accelerator (it created no simulated tensor)")
    if not problems:
        msg = case.error.message_for(torch_version)
        result.checks.append(f"broken.py raised {case.error.exception}: {msg.text if msg else ''}")
    result.problems += [f"broken: {p}" for p in problems]

    if cells is not None:
        if page.failure and page.fixed_finished:
            result.problems.append(f"page: {page.failure}")  # a later cell (find it, ...) failed
        good_ok, good_usage = page.fixed_finished, page.fixed_usage
        good_failure = f"the page stopped: {page.failure}" if page.failure else "the fix cell raised"
        good_values = page.fixed_values
    else:
        good = run(fixed, run_mode, timeout, extra_env=extra_env)
        good_ok, good_usage, good_values = good.ok, good.usage, good.values
        exc = good.exception
        good_failure = f"{exc['type']}: {exc['message']}" if exc else (good.stderr.strip().splitlines() or ["crashed"])[-1]
    if not good_ok:
        result.problems.append(f"fixed: fixed.py did not finish: {good_failure}")
    elif run_mode == "cuda" and good_usage == 0:
        result.problems.append("fixed: fixed.py never used the accelerator")
    elif ref_mode is not None:
        ref = run(fixed, ref_mode, timeout, extra_env=extra_env)
        if not ref.ok:
            exc = ref.exception
            result.problems.append(f"fixed: the CPU reference run failed: {exc['type'] if exc else 'crashed'}")
        else:
            ref_values = ref.values()
            sim_values = good_values()
            if cells is not None:
                # the page's namespace also holds what the broken cell left: only the names
                # the fixed program binds (those of its CPU run) are its results
                sim_values = {k: v for k, v in sim_values.items() if k in ref_values}
            diffs, count = compare_values(sim_values, ref_values)
            if real:
                # Real CUDA draws random numbers from its own generator (Philox, not the CPU's
                # Mersenne Twister) and sums in another order, so a fixed program's numbers
                # differ from a CPU run's wherever it draws on the device (seen on the H200
                # tier for 27 of 53 cases). What the tier proves is that the fix runs on CUDA;
                # the comparison is reported, not required.
                result.checks.append(f"fixed.py finished on CUDA; {count} of {count + len(diffs)} "
                                     "compared values equal a plain CPU run")
            else:
                if count == 0:
                    diffs.append("fixed.py left no tensors to compare with the CPU run")
                result.problems += [f"fixed: {d}" for d in diffs]
                if not diffs:
                    result.checks.append(f"fixed.py finished; {count} tensors equal a plain CPU run")
    else:
        result.checks.append("fixed.py finished")
    result.status = FAIL if result.problems else PASS
    result.seconds = time.perf_counter() - start
    return result


def verify_cases(cases: list[Case], *, real: bool = False, jobs: int = 2, cold: bool = False,
                 swapped: bool = False, pages_dir: Path | None = None,
                 on_result: Callable[[CaseResult], None] | None = None) -> list[CaseResult]:
    """Verify several cases, ``jobs`` at a time; report each as it finishes.

    ``swapped=True`` verifies each case with its broken and fixed programs exchanged (the
    mutation check: every case must then fail).

    Each job keeps one warm interpreter (torch imported once) and runs each case's page in a
    fork of it (``samedevice.verify.page``: the page's cells are the broken and fixed runs),
    and the CPU reference run of ``fixed.py`` in another fork. ``pages_dir`` keeps the
    executed pages there (``<slug>.ipynb``), for the page test to compare instead of running
    them again. ``cold=True`` starts a fresh interpreter per program and runs no page (the
    slower way, kept for ``benchmarks/verify_speed.py`` and for comparison).
    """
    import queue

    jobs = max(1, min(jobs, len(cases)))
    # On a GPU machine a fork must not inherit a CUDA driver the worker touched: the real tier
    # keeps fresh interpreters.
    cold = cold or real
    runners: queue.Queue = queue.Queue()
    warm: list = []
    if not cold:
        from samedevice.sim.warm import WarmRunner

        warm = [WarmRunner() for _ in range(jobs)]  # start importing torch in parallel
    for w in warm or [None] * jobs:
        runners.put(w)

    def one(case: Case) -> CaseResult:
        w = runners.get()
        try:
            programs = {"broken": case.fixed_path, "fixed": case.broken_path} if swapped else {}
            pages = w.run_page if w is not None and w.runs_pages and not swapped else None
            result = verify_case(case, real=real, runner=w.run if w is not None else None,
                                 page_runner=pages, **programs)
            if pages_dir is not None and result.page is not None:
                from .page import save_page_run

                save_page_run(case, result.page, pages_dir)
            return result
        finally:
            runners.put(w)

    results: list[CaseResult] = []
    try:
        for w in warm:
            w.wait_ready()  # so a case's time is its programs', not the start-up's
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(one, c) for c in cases]
            for fut in as_completed(futures):
                r = fut.result()
                results.append(r)
                if on_result:
                    on_result(r)
    finally:
        for w in warm:
            w.close()
    order = {c.slug: i for i, c in enumerate(cases)}
    return sorted(results, key=lambda r: order[r.case.slug])
