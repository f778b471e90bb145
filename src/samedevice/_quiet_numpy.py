"""Silence torch's "Failed to initialize NumPy" warning when numpy is simply not installed.

numpy is optional for torch (samedevice's ``[torch]`` extra brings it); without it, every
``import torch`` warns once. The samedevice CLI and the simulator never need numpy, and a
user's program that does fails on its own ``import numpy``, so the warning says nothing useful
in their processes. A numpy that is installed but broken still warns.
"""

from __future__ import annotations


def quiet_missing_numpy() -> None:
    import importlib.util

    if importlib.util.find_spec("numpy") is not None:
        return
    import warnings

    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
