"""Running programs in a warm interpreter: ``run_script`` without paying for ``import torch``.

A cold run (``runner.run_script``) starts a new Python that imports torch: about 3 s before the
program's first line. ``WarmRunner`` keeps one interpreter with torch imported and runs each
program in a fork of it (see ``_warm_worker``), with the same environment, folder, device view
and result files as a cold run, so ``RunResult`` means the same thing either way. A program's
side effects stay in its own child; the plain-CPU reference run is a fork that never enables
the simulator.

One ``WarmRunner`` serves one thread at a time; ``verify`` keeps one per job.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .runner import RunResult, collect, prepare

if TYPE_CHECKING:
    from samedevice.verify.page import PageRun


class WorkerError(RuntimeError):
    """The warm interpreter died or answered nonsense (not the program's failure)."""


class WarmRunner:
    def __init__(self) -> None:
        env = dict(os.environ)
        for name in ("SAMEDEVICE_SIM", "SAMEDEVICE_RESULT", "SAMEDEVICE_USAGE_DIR"):
            env.pop(name, None)  # the worker itself stays a plain interpreter
        env.setdefault("OMP_NUM_THREADS", "1")  # as in every cold run; fork-safe torch
        env["PYTHONHASHSEED"] = "0"  # as in the kernels that produced the pages' outputs
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "samedevice.sim._warm_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )
        self._ready = False
        self.runs_pages = False  # whether the worker could import what a case page needs
        self._lock = threading.Lock()

    def _answer(self) -> dict:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise WorkerError(f"the warm interpreter exited ({self._proc.poll()})")
        return json.loads(line)

    def wait_ready(self) -> None:
        """Block until torch is imported in the worker (started in the constructor)."""
        with self._lock:
            if not self._ready:
                self.runs_pages = bool(self._answer().get("pages"))
                self._ready = True

    def _request(self, request: dict) -> dict:
        with self._lock:
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write(json.dumps(request) + "\n")
                self._proc.stdin.flush()
            except BrokenPipeError:
                raise WorkerError("the warm interpreter is gone") from None
            return self._answer()

    def run(self, script: Path | str, mode: str = "cuda", timeout: float = 300.0,
            workdir: Path | None = None, extra_env: dict[str, str] | None = None) -> RunResult:
        """Like ``runner.run_script``: run ``script`` in ``mode``; never raises for its errors."""
        self.wait_ready()
        script, tmp, env = prepare(script, mode, extra_env)
        out, err = tmp / "stdout.txt", tmp / "stderr.txt"
        request = {"script": str(script), "cwd": str(workdir or tmp), "env": env,
                   "timeout": timeout, "stdout": str(out), "stderr": str(err)}
        answer = self._request(request)

        def read(path: Path) -> str:
            try:
                return path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return ""

        return collect(script, mode, tmp, answer["returncode"], answer["seconds"], read(out),
                       read(err), answer["timed_out"])

    def run_page(self, page: Path, broken_cell: int, fixed_cell: int, mode: str = "cuda",
                 timeout: float = 300.0, extra_env: dict[str, str] | None = None) -> PageRun:
        """Run a case page (``samedevice.verify.page``) in a fork, as its kernel would: in the
        page's folder, seeing the device ``mode`` gives; never raises for the page's errors."""
        from samedevice.verify.page import read_page_run

        self.wait_ready()
        _, folder, env = prepare(page, mode, extra_env)
        # The page loads the simulator itself (``%load_ext samedevice``) and is no program
        # whose exit is recorded; processes it starts still find the device through the env.
        env.pop("SAMEDEVICE_RESULT", None)
        env.setdefault("SAMEDEVICE_DOCS_URL", "../../")  # as pages.execute.kernel_env
        request = {"page": str(page), "folder": str(folder), "cwd": str(Path(page).parent),
                   "env": env, "timeout": timeout, "broken_cell": broken_cell,
                   "fixed_cell": fixed_cell, "stdout": str(folder / "child-stdout.txt"),
                   "stderr": str(folder / "child-stderr.txt")}
        answer = self._request(request)
        try:
            return read_page_run(folder, answer["seconds"], answer["timed_out"])
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self) -> WarmRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
