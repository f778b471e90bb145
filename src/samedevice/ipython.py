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
    if mode == "plain":
        print("samedevice: SAMEDEVICE_SIM=plain, PyTorch is left as it is")
        return
    if mode == "cpu-build":
        from samedevice.sim import _cpu_build

        _cpu_build.enable()
        os.environ["SAMEDEVICE_SIM"] = mode  # `!python ...` from the notebook: the same build
        return
    if torch.cuda.is_available() and mode != "sim":
        print(f"samedevice: this machine has CUDA ({torch.cuda.get_device_name(0)}); "
              "\"cuda\" is the real GPU, the simulator stays off")
        return
    from samedevice import sim
    from samedevice.sim import _tracebacks
    from samedevice.sim.runner import STARTUP_DIR

    gpus = os.environ.get("SAMEDEVICE_GPUS")  # a page whose case needs two GPUs sets it
    # a notebook shows what CUDA prints: not the simulator's note that torch.compile runs
    # aot_eager here (samedevice run and sim.enable() still say it once)
    import warnings

    warnings.filterwarnings("ignore", message="samedevice.sim: Inductor cannot generate code")
    sim.enable(alias_cuda=(mode == "cuda"), gpus=int(gpus) if gpus else None)
    # Processes started from the notebook (spawned ranks, `!python ...`) see the same device.
    os.environ["SAMEDEVICE_SIM"] = mode
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STARTUP_DIR), os.environ.get("PYTHONPATH")]))

    def show_without_simulator(shell: Any, etype: type, value: BaseException, tb: Any,
                               tb_offset: int | None = None) -> None:
        _tracebacks.strip_exception(value)
        shell.showtraceback((etype, value, value.__traceback__), tb_offset=tb_offset)

    ipython.set_custom_exc((Exception,), show_without_simulator)
    # `%run program.py` (pages whose programs read files beside them) shows its error through
    # showtraceback directly, not through the custom handler: strip there too
    shown = ipython.showtraceback

    def showtraceback(exc_tuple: Any = None, *args: Any, **kwargs: Any) -> Any:
        try:
            etype, value, _ = ipython._get_exc_info(exc_tuple)
        except ValueError:  # no exception to show: IPython says so itself
            return shown(exc_tuple, *args, **kwargs)
        if isinstance(value, Exception):
            _tracebacks.strip_exception(value)
            exc_tuple = (etype, value, value.__traceback__)
        return shown(exc_tuple, *args, **kwargs)

    ipython.showtraceback = showtraceback
    # DataLoader workers and Pool workers forked from the kernel send their errors' formatted
    # tracebacks back: those leave the simulator's frames out too
    from samedevice.sim import _process

    _process._strip_wrapped_tracebacks()
    _process._strip_pool_tracebacks()
    # one line, so a reader knows what "cuda" means in this notebook from here on
    name = "\"cuda\"" if mode == "cuda" else "\"sim\""
    count = sim.device_count()
    print(f"samedevice: {name} is the simulated accelerator in this notebook "
          f"({count} GPU{'s' * (count != 1)}, on the CPU; its device errors are CUDA's, word for word)")
