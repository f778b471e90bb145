"""``%load_ext samedevice``: the simulated accelerator in a notebook, answering to "cuda".

Case pages and nbmake runs load it in their first (hidden) cell, before any tensor exists, so
the notebook's "cuda" code runs on a CPU-only machine and prints what CUDA prints; tracebacks
leave out the simulator's own frames, as CUDA's end in C++. On a machine with a real GPU the
extension leaves PyTorch alone: the page then runs on CUDA itself. ``SAMEDEVICE_SIM=sim``
keeps the simulator's own name (``sim:0``); ``SAMEDEVICE_SIM=plain`` disables it.
"""

from __future__ import annotations

import os
from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    import torch

    mode = os.environ.get("SAMEDEVICE_SIM", "cuda")
    if mode == "plain" or (torch.cuda.is_available() and mode != "sim"):
        return
    from samedevice import sim
    from samedevice.sim import _tracebacks
    from samedevice.sim.runner import STARTUP_DIR

    gpus = os.environ.get("SAMEDEVICE_GPUS")  # a page whose case needs two GPUs sets it
    sim.enable(alias_cuda=(mode == "cuda"), gpus=int(gpus) if gpus else None)
    # Processes started from the notebook (spawned ranks, `!python ...`) see the same device.
    os.environ["SAMEDEVICE_SIM"] = mode
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STARTUP_DIR), os.environ.get("PYTHONPATH")]))

    def show_without_simulator(shell: Any, etype: type, value: BaseException, tb: Any,
                               tb_offset: int | None = None) -> None:
        _tracebacks.strip_exception(value)
        shell.showtraceback((etype, value, value.__traceback__), tb_offset=tb_offset)

    ipython.set_custom_exc((Exception,), show_without_simulator)
    # DataLoader workers and Pool workers forked from the kernel send their errors' formatted
    # tracebacks back: those leave the simulator's frames out too
    from samedevice.sim import _process

    _process._strip_wrapped_tracebacks()
    _process._strip_pool_tracebacks()
