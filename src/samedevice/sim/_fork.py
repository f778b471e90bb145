"""CUDA's fork rule: a child forked after the parent touched CUDA cannot initialise it again.

On a GPU machine the CUDA runtime does not survive ``fork()``. PyTorch therefore registers a
``pthread_atfork`` child handler the first time a process touches the runtime
(``torch/csrc/utils/device_lazy_init.cpp``, ``register_fork_handler_for_device_init``; in
``torch/csrc/cuda/Module.cpp`` ``_cuda_init`` and ``_cuda_getDeviceCount`` both call it). In a
child forked after that, ``torch.cuda._is_in_bad_fork()`` is True and the next lazy
initialisation -- creating or moving a tensor to "cuda", ``torch.cuda.current_device()``,
``set_device``, ``synchronize``, ``get_device_properties``, ``get_rng_state`` -- raises from
``torch.cuda._lazy_init``::

    RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with
    multiprocessing, you must use the 'spawn' start method

The simulated machine keeps the same state per process: :func:`lazy_init` is CUDA's lazy
initialisation (the first tensor made on or moved to the simulated GPU, or a ``torch.cuda``
call that initialises), :func:`touch_runtime` is what ``torch.cuda.is_available()`` does
without initialising (it arms the handler unless ``PYTORCH_NVML_BASED_CUDA_CHECK=1``, as on
CUDA); ``torch.cuda.device_count()`` answers from NVML and touches nothing. In a bad fork the
error is raised by PyTorch's own ``torch.cuda._lazy_init``, so the text and the last frame of
the traceback are CUDA's. Spawned processes are fresh interpreters and start clean; the warm
verification worker's children call :func:`fresh_process` because they stand for one.

The plain-CPU reference run (``samedevice run --cpu``) keeps no such state: on a CPU every
fork works.
"""

from __future__ import annotations

import os

import torch

# The message PyTorch raises (torch/cuda/__init__.py, _lazy_init), for tests and docs; the
# error itself is raised by that function.
REINIT = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
          "you must use the 'spawn' start method")

_TORCH_LAZY_INIT = torch.cuda._lazy_init  # PyTorch's, before the CUDA machine replaces it


class _ForkState:
    initialized = False  # the simulated CUDA was initialised in this process
    armed = False  # this process touched the CUDA runtime: its forks are bad forks
    in_bad_fork = False  # this process was forked from an armed one


STATE = _ForkState()
_handler_registered = False


def _forked_child() -> None:
    if STATE.armed:
        STATE.in_bad_fork = True
        STATE.initialized = False


def _simulated() -> bool:
    from ._naming import BACKEND
    from ._registry import STATE as MACHINE

    return MACHINE.target == BACKEND


def touch_runtime() -> None:
    """Arm the at-fork handler (PyTorch's ``register_fork_handler_for_device_init``)."""
    global _handler_registered
    if STATE.armed or not _simulated():
        return
    if not _handler_registered:
        os.register_at_fork(after_in_child=_forked_child)
        _handler_registered = True
    STATE.armed = True


def lazy_init() -> None:
    """CUDA's lazy initialisation: once per process; in a bad fork, PyTorch's error."""
    if STATE.initialized:
        return
    if STATE.in_bad_fork:
        __tracebackhide__ = True
        _count_use()
        if torch.cuda._is_in_bad_fork is is_in_bad_fork:  # the CUDA machine is installed
            _TORCH_LAZY_INIT()  # raises "Cannot re-initialize CUDA in forked subprocess. ..."
        raise RuntimeError(REINIT)
    if not _simulated():
        return
    touch_runtime()
    STATE.initialized = True


def _count_use() -> None:
    """The call that fails here was a use of the simulated GPU: leave a count in the run's usage
    folder, as spawned ranks do (``verify`` rejects a broken program that never used the
    accelerator, and a forked worker's own count dies with it: forks end in ``os._exit``)."""
    usage_dir = os.environ.get("SAMEDEVICE_USAGE_DIR")
    if usage_dir and os.path.isdir(usage_dir):
        with open(os.path.join(usage_dir, f"usage-{os.getpid()}"), "w") as f:
            f.write("1")


def is_in_bad_fork() -> bool:
    """``torch.cuda._is_in_bad_fork()``."""
    return STATE.in_bad_fork


def is_initialized() -> bool:
    """``torch.cuda.is_initialized()``: initialised here, and not in a bad fork."""
    return STATE.initialized and not STATE.in_bad_fork


def fresh_process() -> None:
    """Forget everything: this process stands for a new interpreter (the warm worker's child)."""
    STATE.initialized = False
    STATE.armed = False
    STATE.in_bad_fork = False
