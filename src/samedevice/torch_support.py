"""Which PyTorch releases the simulated GPU supports, and the one line that says so.

The simulator relies on private PyTorch APIs (the Python PrivateUse1 backend, DLPack's
extension device, the dispatcher's Python kernels) whose shape changes between releases, so
``run``, ``verify`` and the pytest plugin check the installed torch before they start and name
the range in one line. ``pyproject.toml``'s ``torch`` extra states the same range (a test keeps
the two equal). ``SAMEDEVICE_ANY_TORCH=1`` tries an unsupported release anyway.
"""

from __future__ import annotations

import os
import re
from importlib import metadata

OLDEST = (2, 13)
NEWEST = (2, 15)
REQUIREMENT = f"torch>={OLDEST[0]}.{OLDEST[1]},<{NEWEST[0]}.{NEWEST[1] + 1}"
INSTALL = f'pip install "{REQUIREMENT}" numpy'
# The CPU wheels: a few hundred MB, against several GB for PyPI's default Linux (CUDA) build,
# and all the simulated GPU needs. Both work.
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def release(version: str) -> tuple[int, int] | None:
    """``(2, 14)`` from ``2.14.1+cu130`` or ``2.15.0.dev20261001``; None if unreadable."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def problem() -> str | None:
    """One line if the installed torch is outside the supported range, else None (also when
    torch is not installed: the command's own import then says how to install it)."""
    if os.environ.get("SAMEDEVICE_ANY_TORCH") == "1":
        return None
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None
    found = release(version)
    if found is not None and OLDEST <= found <= NEWEST:
        return None
    return (f"torch {version} is not supported: the simulated GPU needs torch "
            f"{OLDEST[0]}.{OLDEST[1]} to {NEWEST[0]}.{NEWEST[1]} ({INSTALL}; "
            "SAMEDEVICE_ANY_TORCH=1 tries this one anyway)")
