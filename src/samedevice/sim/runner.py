"""Run a Python program as its user would (``python script.py``), seeing a chosen device.

Modes: ``"cuda"`` -- the simulated accelerator answering to "cuda" (the page's view);
``"sim"`` -- the simulated accelerator under its own name; ``"cpu"`` -- the plain-CPU
reference run ("cuda" read as "cpu"); ``"cpu-build"`` -- PyTorch as a build without CUDA
sees itself (the environment of environment bugs, on a CUDA wheel too); ``"plain"`` --
nothing changed (real CUDA on a GPU machine). Each run is a fresh process: the simulator changes
PyTorch process-wide, and a snippet's module-level state must not leak into the next one.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STARTUP_DIR = Path(__file__).parent / "_startup"
MODES = ("cuda", "sim", "cpu", "cpu-build", "plain")


@dataclass
class RunResult:
    script: Path
    mode: str
    returncode: int
    seconds: float
    stdout: str
    stderr: str
    record: dict[str, Any] = field(default_factory=dict)
    values_blob: bytes | None = None  # the program's tensors and numbers, as torch.save wrote them
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.record.get("status") == "ok"

    @property
    def exception(self) -> dict[str, Any] | None:
        """``{"type", "message", "frames"}`` of the exception that ended the program."""
        exc = self.record.get("exception")
        if exc and is_wrapped(exc.get("type", ""), exc.get("message", "")):
            return _innermost(exc)
        return exc

    @property
    def usage(self) -> int:
        """Simulated tensors the program and the processes it spawned created (0: never used)."""
        return int(self.record.get("usage_all", self.record.get("usage", 0)))

    def values(self) -> dict[str, Any]:
        import torch

        if self.values_blob is None:
            return {}
        return torch.load(io.BytesIO(self.values_blob), weights_only=False)


_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?([A-Z]\w*(?:Error|Exception|Interrupt|Exit))(?::\s?(.*))?$")


def rank_exception(text: str) -> tuple[str, str] | None:
    """A rank's failure under ``torch.multiprocessing.spawn``: the child's final exception line.

    spawn re-raises in the parent as ``ProcessRaisedException`` whose message is the child's
    formatted traceback; its last ``ExceptionType: message`` line is what the rank raised.
    """
    for line in reversed(text.strip().splitlines()):
        m = _EXCEPTION_LINE.match(line.strip())
        if m and m.group(1) != "ProcessRaisedException":
            return m.group(1), m.group(2) or ""
    return None


_DATALOADER_WORKER = re.compile(r"^Caught \w+ in DataLoader worker process \d+\.\nOriginal Traceback ")


def is_wrapped(name: str, text: str) -> bool:
    """Whether an exception only carries another process's: a rank's under
    ``torch.multiprocessing.spawn`` (``ProcessRaisedException``), or a DataLoader worker's,
    which the loader re-raises as ``Caught RuntimeError in DataLoader worker process 0.`` with
    the worker's traceback (its last line is what the worker raised, and what users quote)."""
    return name == "ProcessRaisedException" or bool(_DATALOADER_WORKER.match(text))


def _innermost(exc: dict[str, Any]) -> dict[str, Any]:
    found = rank_exception(exc["message"])
    if found is None:
        return exc
    return {"type": found[0], "message": found[1], "frames": [], "rank_traceback": exc["message"]}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(script: Path | str, mode: str, extra_env: dict[str, str] | None = None
            ) -> tuple[Path, Path, dict[str, str]]:
    """The resolved script, a fresh temporary folder and the environment a run in ``mode`` sees."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    script = Path(script).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="samedevice-run-"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STARTUP_DIR), env.get("PYTHONPATH", "")]))
    env["SAMEDEVICE_SIM"] = mode  # "plain": nothing simulated or mapped, only recorded
    env["SAMEDEVICE_RESULT"] = str(tmp / "result.json")
    usage_dir = tmp / "usage"
    usage_dir.mkdir()
    env["SAMEDEVICE_USAGE_DIR"] = str(usage_dir)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env["MASTER_PORT"] = str(_free_port())
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra_env or {})
    return script, tmp, env


def collect(script: Path, mode: str, tmp: Path, returncode: int, seconds: float, stdout: str,
            stderr: str, timed_out: bool) -> RunResult:
    """Read what the run left in ``tmp`` (how it ended, its simulated tensors, its values), then
    remove ``tmp``: a verify of every case makes hundreds of these folders."""
    result_file = tmp / "result.json"
    try:
        record = json.loads(result_file.read_text())
    except (OSError, ValueError):
        record = {"status": "crashed"}
    record["usage_all"] = sum(int(p.read_text() or 0) for p in (tmp / "usage").glob("usage-*"))
    values = result_file.with_name(result_file.name + ".pt")
    blob = values.read_bytes() if values.exists() else None
    shutil.rmtree(tmp, ignore_errors=True)
    return RunResult(script, mode, returncode, seconds, stdout, stderr, record, blob, timed_out)


def run_script(script: Path | str, mode: str = "cuda", timeout: float = 300.0,
               workdir: Path | None = None, extra_env: dict[str, str] | None = None) -> RunResult:
    """Run ``script`` in a fresh interpreter in ``mode``; never raises for the script's own errors."""
    script, tmp, env = prepare(script, mode, extra_env)
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, str(script)],
            cwd=str(workdir or tmp),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        returncode, stdout, stderr, timed_out = proc.returncode, proc.stdout, proc.stderr, False
    except subprocess.TimeoutExpired as e:
        returncode, timed_out = -9, True
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
    return collect(script, mode, tmp, returncode, time.perf_counter() - start, stdout, stderr, timed_out)
