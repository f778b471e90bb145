"""Inside a process run by ``runner``: set the device view up and record how the program ended.

The parent reads two files: ``$SAMEDEVICE_RESULT`` (JSON: how the program ended, which
exception, how many simulated tensors it made) and ``$SAMEDEVICE_RESULT.pt`` (the tensors and
module states it left in ``__main__``, moved to the CPU, for comparison with a CPU run).
Only the process the runner started records; ranks it spawns do not inherit the file names.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import traceback
from typing import Any

_MAX_DEPTH = 4


def start(mode: str) -> None:
    gpus = os.environ.get("SAMEDEVICE_GPUS")
    if mode == "cpu":
        from . import _cpu_mode

        _cpu_mode.enable(gpus=int(gpus) if gpus else None)
    elif mode in ("cuda", "sim"):
        from samedevice import sim

        sim.enable(alias_cuda=(mode == "cuda"), gpus=int(gpus) if gpus else None)
    elif mode == "cpu-build":
        from . import _cpu_build

        _cpu_build.enable()
    elif mode != "plain":
        print(f"samedevice: unknown SAMEDEVICE_SIM={mode!r}; expected cuda, sim, cpu, cpu-build or plain",
              file=sys.stderr)
        raise SystemExit(2)
    usage_dir = os.environ.get("SAMEDEVICE_USAGE_DIR")
    if usage_dir and mode in ("cuda", "sim"):
        atexit.register(_write_usage, usage_dir)
    if mode in ("cuda", "sim") and os.environ.get("SAMEDEVICE_DIAGNOSE") == "1":
        _share_rank_diagnoses()
    if mode in ("cuda", "sim"):
        _strip_formatted_tracebacks()
        _strip_uncaught_tracebacks()
        _strip_wrapped_tracebacks()
        _strip_pool_tracebacks()
    result = os.environ.pop("SAMEDEVICE_RESULT", None)
    if result:
        _Recorder(result, mode).install()


def _write_usage(usage_dir: str) -> None:
    """Each process (spawned ranks too) leaves its count of simulated tensors for the runner."""
    from ._plumbing import USAGE

    try:
        with open(os.path.join(usage_dir, f"usage-{os.getpid()}"), "w") as f:
            f.write(str(USAGE.created))
    except OSError:
        # a rank still exiting after the runner finished and removed the folder: its count
        # no longer matters, and its exit must not print a traceback
        pass


def _strip_uncaught_tracebacks() -> None:
    """An uncaught error prints the traceback a CUDA user would see (no simulator frames)."""
    previous = sys.excepthook

    def hook(exc_type: type, exc: BaseException, tb: Any) -> None:
        from ._tracebacks import strip_exception

        strip_exception(exc)
        previous(exc_type, exc, exc.__traceback__)
        if os.environ.get("SAMEDEVICE_DIAGNOSE") == "1":
            # after CUDA's unchanged traceback: which operand, where it was made, the fix
            from samedevice.diagnosis import print_diagnosis

            print_diagnosis(exc, os.environ.get("SAMEDEVICE_DIAGNOSIS_JSON"))

    sys.excepthook = hook


def _strip_formatted_tracebacks() -> None:
    """Ranks started by torch.multiprocessing.spawn send ``traceback.format_exc()`` to the
    parent; leave the simulator's frames out of it, as CUDA's errors have none."""
    original = traceback.format_exc

    def format_exc(limit: int | None = None, chain: bool = True) -> str:
        exc = sys.exc_info()[1]
        if exc is None:
            return original(limit, chain)
        from ._tracebacks import strip_exception

        strip_exception(exc)
        caller = sys._getframe(1)
        if caller.f_globals.get("__name__") == "torch.multiprocessing.spawn":
            _save_rank_diagnosis(exc)
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=limit, chain=chain))

    traceback.format_exc = format_exc


# A rank started by torch.multiprocessing.spawn reports its error to the parent as text, and the
# parent raises ProcessRaisedException, whose frames are the parent's. The rank, which still holds
# the failing frames, leaves its diagnosis in this folder under its pid; the parent prints it after
# its own traceback (samedevice.diagnosis.print_diagnosis reads error_pid).
RANK_DIAGNOSES = "SAMEDEVICE_RANK_DIAGNOSES"


def _share_rank_diagnoses() -> None:
    if os.environ.get(RANK_DIAGNOSES):
        return  # a rank: the folder is its parent's
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="samedevice-ranks-")
    os.environ[RANK_DIAGNOSES] = folder
    atexit.register(shutil.rmtree, folder, True)


def _save_rank_diagnosis(exc: BaseException) -> None:
    folder = os.environ.get(RANK_DIAGNOSES)
    if not folder or os.environ.get("SAMEDEVICE_DIAGNOSE") != "1":
        return
    from samedevice.diagnosis import diagnosis_of

    try:
        found = diagnosis_of(exc)
        if found is not None:
            with open(os.path.join(folder, f"{os.getpid()}.json"), "w", encoding="utf-8") as f:
                json.dump(found, f)
    except Exception as e:  # the rank's own error must still reach the parent
        sys.stderr.write(f"samedevice: no diagnosis in rank {os.getpid()} ({type(e).__name__}: {e})\n")


def _strip_wrapped_tracebacks() -> None:
    """DataParallel replicas and DataLoader workers re-raise a thread's or worker's error with
    its formatted traceback in the message (``torch._utils.ExceptionWrapper``): leave the
    simulator's frames out of that text too."""
    import torch._utils

    wrapper = torch._utils.ExceptionWrapper
    original = wrapper.__init__
    if getattr(original, "_samedevice", False):
        return

    def __init__(self: Any, exc_info: Any = None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        if exc_info[1] is not None:
            from ._tracebacks import strip_exception

            strip_exception(exc_info[1])
            exc_info = (exc_info[0], exc_info[1], exc_info[1].__traceback__)
        original(self, exc_info, where)

    __init__._samedevice = True  # type: ignore[attr-defined]
    wrapper.__init__ = __init__


def _strip_pool_tracebacks() -> None:
    """A ``multiprocessing.Pool`` or ``ProcessPoolExecutor`` worker sends its error's formatted
    traceback to the parent, which shows it as the ``RemoteTraceback`` the re-raised error is
    chained to: leave the simulator's frames out of it (a worker that cannot initialise CUDA
    after a fork)."""
    import concurrent.futures.process
    import multiprocessing.pool

    for wrapper in (multiprocessing.pool.ExceptionWithTraceback,
                    concurrent.futures.process._ExceptionWithTraceback):
        _strip_remote(wrapper)


def _strip_remote(wrapper: type) -> None:
    original = wrapper.__init__
    if getattr(original, "_samedevice", False):
        return

    def __init__(self: Any, exc: BaseException, tb: Any) -> None:
        from ._tracebacks import strip_exception

        strip_exception(exc)
        original(self, exc, exc.__traceback__)

    __init__._samedevice = True  # type: ignore[attr-defined]
    wrapper.__init__ = __init__


def _frames(tb: Any) -> list[dict]:
    frames = []
    for fs in traceback.extract_tb(tb):
        if "/samedevice/" in fs.filename.replace("\\", "/") or fs.filename.startswith("<frozen"):
            continue
        frames.append({"file": fs.filename, "line": fs.lineno, "name": fs.name, "code": fs.line or ""})
    return frames


class _Recorder:
    def __init__(self, path: str, mode: str) -> None:
        self.path = path
        self.mode = mode
        self.record: dict[str, Any] = {"status": "ok", "mode": mode, "exception": None}

    def install(self) -> None:
        previous = sys.excepthook

        def hook(exc_type: type, exc: BaseException, tb: Any) -> None:
            if self.mode in ("cuda", "sim"):
                from ._tracebacks import strip_exception

                strip_exception(exc)  # record what a CUDA user would see
                tb = exc.__traceback__
            self.record["status"] = "error"
            self.record["exception"] = {
                "type": exc_type.__name__,
                "module": exc_type.__module__,
                "message": str(exc),
                "frames": _frames(tb),
            }
            previous(exc_type, exc, tb)

        sys.excepthook = hook
        atexit.register(self.write)

    def write(self) -> None:
        import torch

        plumbing = sys.modules.get("samedevice.sim._plumbing")
        self.record["usage"] = plumbing.USAGE.created if plumbing else 0
        self.record["torch"] = torch.__version__
        values = {}
        main = sys.modules.get("__main__")
        if self.record["status"] == "ok" and main is not None:
            with torch._C.DisableTorchFunction():  # the alias must not rename devices here
                for name, value in list(vars(main).items()):
                    if name.startswith("_"):
                        continue
                    captured = _capture(value, 0)
                    if captured is not None:
                        values[name] = captured
            torch.save(values, self.path + ".pt")
        self.record["values"] = sorted(values)
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(self.record, f)


def _capture(value: Any, depth: int) -> Any:
    """Tensors, module and optimizer states, numbers, and containers of them -- on the CPU."""
    import torch

    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, torch.nn.Module):
        return {k: v.detach().to("cpu", copy=True) for k, v in value.state_dict().items()}
    if isinstance(value, torch.optim.Optimizer):
        return _capture(value.state_dict()["state"], depth + 1)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if isinstance(value, dict):
        out = {k: _capture(v, depth + 1) for k, v in value.items() if isinstance(k, str | int)}
        out = {k: v for k, v in out.items() if v is not None}
        return out or None
    if isinstance(value, list | tuple):
        items = [_capture(v, depth + 1) for v in value]
        return items if any(i is not None for i in items) else None
    return None
