"""Install one real release into a throwaway folder and run its driver on the simulated
accelerator, then judge what happened against the case's documented error.

The release and its pinned extras go into a folder of their own with ``pip install --target
--no-deps``: nothing touches the project's venv, and torch always comes from the venv. The
driver runs as ``python driver.py`` would, through ``samedevice.sim.runner.run_script`` with
"cuda" mapped to the simulated device and the folder on PYTHONPATH. Downloads are cached in
``$SAMEDEVICE_UPSTREAM_CACHE`` (default: a folder in the system's temporary directory).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from samedevice.cases import Case
from samedevice.sim.runner import STARTUP_DIR, RunResult, run_script
from tests.upstream.releases import FAIL, PASS, Release, UpstreamCase

DRIVERS = Path(__file__).parent / "drivers"


def _driver_prefix() -> str:
    """The drivers' report prefix, read from the drivers' own module (they run as scripts and
    cannot import from ``tests``)."""
    spec = importlib.util.spec_from_file_location("_upstream_report", DRIVERS / "_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PREFIX


PREFIX = _driver_prefix()


class InstallError(RuntimeError):
    pass


def pip_cache() -> Path:
    return Path(os.environ.get("SAMEDEVICE_UPSTREAM_CACHE")
                or Path(tempfile.gettempdir()) / "samedevice-upstream-pip")


def install(requirements: Sequence[str], target: Path, timeout: float = 600.0) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-input",
           "--disable-pip-version-check", "--target", str(target),
           "--cache-dir", str(pip_cache()), *requirements]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise InstallError(f"pip could not install {' '.join(requirements)} "
                           f"(exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def driver_env(target: Path) -> dict[str, str]:
    """PYTHONPATH for the driver. ``extra_env`` replaces the runner's PYTHONPATH, so the
    simulator's startup folder must be named again, first; the release comes before anything
    the caller had on PYTHONPATH."""
    parts = [str(STARTUP_DIR), str(target), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in parts if p)}


def reports(stdout: str) -> list[dict]:
    """The driver's reports (every rank's), in the order they were written."""
    return [json.loads(line[len(PREFIX):]) for line in stdout.splitlines() if line.startswith(PREFIX)]


@dataclass
class Observation:
    """One release's run, judged. ``problems`` is empty when it did what was expected."""

    version: str
    expected: str
    observed: str  # "pass", "fail", "timeout" or "crashed"
    seconds: float
    usage: int
    exception: str | None = None
    message: str | None = None
    problems: list[str] = field(default_factory=list)
    requirements: tuple[str, ...] = ()  # the release's own pinned companions

    def to_record(self) -> dict:
        out = {"version": self.version, "expected": self.expected, "observed": self.observed}
        if self.requirements:
            out["requirements"] = list(self.requirements)
        if self.observed == FAIL:
            out |= {"exception": self.exception, "message": self.message}
        return out


def observe(result: RunResult) -> str:
    if result.timed_out:
        return "timeout"
    if result.ok:
        return PASS
    return FAIL if result.exception else "crashed"


def judge(case: Case, spec: UpstreamCase, release: Release, target: Path,
          result: RunResult, torch_version: str) -> Observation:
    exc = result.exception or {}
    obs = Observation(release.version, release.expected, observe(result), result.seconds,
                      result.usage, exc.get("type"), exc.get("message"),
                      requirements=release.requirements)
    found = reports(result.stdout)
    obs.problems += _check_import(spec, release, target, found)
    if obs.observed != release.expected:
        obs.problems.append(f"expected {release.expected}, observed {obs.observed}"
                            + (f" ({obs.exception}: {obs.message})" if obs.exception else "")
                            + f"\n--- stderr (end) ---\n{result.stderr[-3000:]}")
    elif release.expected == FAIL:
        obs.problems += _check_failure(case, spec, target, exc, torch_version)
    else:
        if result.usage <= 0:
            obs.problems.append("never used the accelerator (no simulated tensor was created)")
        if not any(r.get("event") == "done" for r in found):
            obs.problems.append("the driver exited without reporting its result")
    if spec.check is not None:
        obs.problems += spec.check(release.expected, found)
    return obs


def _check_import(spec: UpstreamCase, release: Release, target: Path, found: list[dict]) -> list[str]:
    """The driver must have imported the release just installed, and the venv's torch."""
    imported = [r for r in found if r.get("event") == "imported"]
    if not imported:
        return ["the driver never reported importing the library"]
    problems = []
    for r in imported:
        if r["distribution"] != spec.package or r["version"] != release.version:
            problems.append(f"imported {r['distribution']} {r['version']}, not {release.version}")
        if not Path(r["file"]).resolve().is_relative_to(target.resolve()):
            problems.append(f"imported the library from {r['file']}, not from {target}")
        if Path(r["torch_file"]).resolve().is_relative_to(target.resolve()):
            problems.append(f"torch came from the throwaway folder: {r['torch_file']}")
    return problems


def _check_failure(case: Case, spec: UpstreamCase, target: Path, exc: dict,
                   torch_version: str) -> list[str]:
    """The documented exception and message, word for word, raised through the buggy
    function of the installed release."""
    problems = []
    documented = case.error.message_for(torch_version)
    if documented is None:
        return [f"{case.slug} documents no message for torch {torch_version}"]
    if exc.get("type") != case.error.exception:
        problems.append(f"exception {exc.get('type')}, documented {case.error.exception}")
    if exc.get("message") != documented.text:
        problems.append(f"message {exc.get('message')!r}\n documented {documented.text!r}")
    suffix, function = spec.failure_frame
    frames = exc.get("frames", [])
    if not any(f["file"].endswith(suffix) and f["name"] == function
               and Path(f["file"]).resolve().is_relative_to(target.resolve()) for f in frames):
        where = [f"{f['file']}:{f['line']} {f['name']}" for f in frames]
        problems.append(f"the failure did not pass through {function}() in {suffix} of the "
                        f"installed release; frames: {where}")
    return problems


def run_release(case: Case, spec: UpstreamCase, release: Release, workdir: Path,
                torch_version: str) -> Observation:
    target = workdir / "site-packages"
    install([f"{spec.package}=={release.version}", *spec.requirements, *release.requirements], target)
    # the simulated machine has the GPUs the case needs (two for a device_map split)
    env = driver_env(target) | {"SAMEDEVICE_GPUS": str(max(1, case.devices_needed))}
    result = run_script(DRIVERS / spec.driver, mode="cuda", timeout=spec.timeout,
                        workdir=workdir, extra_env=env)
    return judge(case, spec, release, target, result, torch_version)
