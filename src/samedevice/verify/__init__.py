"""Proving a case: the broken program fails as documented, the fixed one computes what the CPU does.

For a case verified on the simulated accelerator (``verify = "sim"`` or ``"dist"``):

1. ``broken.py`` runs with the simulated device answering to "cuda". It must end with the
   exception type and the *exact* message the case's metadata records for this torch version
   (which pins the template, the op or wrapper, the argument and the device pair), and it
   must have put tensors on the accelerator.
2. ``fixed.py`` runs the same way and must finish; it runs again on the plain CPU ("cuda"
   read as "cpu"), and every tensor, module state and number it left behind must match
   (``torch.testing.assert_close``).

``verify = "cpu"`` cases (environment bugs) run both programs in the unchanged CPU-only
environment; ``"gpu-only"`` cases are skipped with their stated reason. With ``real=True`` the
programs run unchanged on a real CUDA device (the GPU tier), or are skipped where none exists.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from samedevice.cases import Case

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
        return [f"the case records no message for torch {torch_version} (add an era to error.messages)"]
    if exc is None:
        return ["broken.py finished without an error"]
    problems = []
    if exc["type"] != case.error.exception:
        problems.append(f"raised {exc['type']}, expected {case.error.exception}")
    got = exc["message"].strip()
    if got != expected.text.strip():
        problems.append(f"message differs:\n    expected: {expected.text.strip()}\n    got:      {got}")
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


def verify_case(case: Case, *, real: bool = False, broken: Path | None = None,
                fixed: Path | None = None, timeout: float = 300.0) -> CaseResult:
    """Prove one case. ``broken``/``fixed`` override the snippet paths (used by tests)."""
    import time

    from samedevice.sim.runner import run_script

    broken = broken or case.broken_path
    fixed = fixed or case.fixed_path
    torch_version = _torch_version()
    start = time.perf_counter()
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
            # an environment bug: the broken program assumes a machine without a GPU
            extra_env["CUDA_VISIBLE_DEVICES"] = ""
            ref_mode = None
    elif case.verify == "gpu-only":
        return CaseResult(case, SKIP, reason=f"GPU-only: {case.verify_reason}",
                          torch_version=torch_version)
    elif case.verify == "cpu":
        result = CaseResult(case, SKIP, device="cpu", torch_version=torch_version)
        run_mode, ref_mode = "plain", None
    else:
        result = CaseResult(case, SKIP, device="sim", torch_version=torch_version)
        run_mode, ref_mode = "cuda", "cpu"
        # the simulated machine has as many GPUs as the case needs (F8 cases ask for two)
        extra_env["SAMEDEVICE_GPUS"] = str(case.devices_needed)

    bad = run_script(broken, run_mode, timeout, extra_env=extra_env)
    problems = check_error(case, bad.exception, torch_version)
    if bad.timed_out:
        problems.insert(0, f"broken.py timed out after {timeout:.0f} s")
    if run_mode == "cuda" and bad.usage == 0:
        problems.append("broken.py never used the accelerator (it created no simulated tensor)")
    if not problems:
        msg = case.error.message_for(torch_version)
        result.checks.append(f"broken.py raised {case.error.exception}: {msg.text if msg else ''}")
    result.problems += [f"broken: {p}" for p in problems]

    good = run_script(fixed, run_mode, timeout, extra_env=extra_env)
    if not good.ok:
        exc = good.exception
        what = f"{exc['type']}: {exc['message']}" if exc else (good.stderr.strip().splitlines() or ["crashed"])[-1]
        result.problems.append(f"fixed: fixed.py did not finish: {what}")
    elif run_mode == "cuda" and good.usage == 0:
        result.problems.append("fixed: fixed.py never used the accelerator")
    elif ref_mode is not None:
        ref = run_script(fixed, ref_mode, timeout, extra_env=extra_env)
        if not ref.ok:
            exc = ref.exception
            result.problems.append(f"fixed: the CPU reference run failed: {exc['type'] if exc else 'crashed'}")
        else:
            diffs, count = compare_values(good.values(), ref.values())
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


def verify_cases(cases: list[Case], *, real: bool = False, jobs: int = 2,
                 on_result: Callable[[CaseResult], None] | None = None) -> list[CaseResult]:
    """Verify several cases concurrently (each runs in its own processes); report as they finish."""
    results: list[CaseResult] = []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(verify_case, c, real=real) for c in cases]
        for fut in as_completed(futures):
            r = fut.result()
            results.append(r)
            if on_result:
                on_result(r)
    order = {c.slug: i for i, c in enumerate(cases)}
    return sorted(results, key=lambda r: order[r.case.slug])
