"""``%load_ext samedevice``: the simulated accelerator in a notebook, answering to "cuda".

Case pages and nbmake runs load it in their first (hidden) cell, before any tensor exists, so
the notebook's "cuda" code runs on a CPU-only machine and prints what CUDA prints. On a
machine with a real GPU the extension leaves PyTorch alone: the page then runs on CUDA itself.
Set ``SAMEDEVICE_SIM=sim`` to keep the simulator's own name (``sim:0``) instead.
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

    sim.enable(alias_cuda=(mode == "cuda"))
