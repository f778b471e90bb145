"""A PyTorch built without CUDA, on any PyTorch: the environment of ``verify = "cpu"`` cases.

Those cases are environment bugs of a CPU-only build (``AssertionError: Torch not compiled
with CUDA enabled``, ``torch.load`` of a CUDA checkpoint with ``is_available()`` False). On the
CPU wheel nothing needs changing. A CUDA wheel on a machine without a GPU driver says something
else (``Found no NVIDIA driver on your system``), so there the CUDA entry points that PyTorch's
Python layer tests for are hidden: ``torch.cuda._is_compiled()`` and ``is_available()`` are
False, ``torch.cuda._lazy_init`` (which C++ calls before the first CUDA tensor) raises the
CPU-only build's assertion, ``torch.version.cuda`` is None and ``torch.backends.cuda.is_built()``
is False. The compiled library itself is untouched: the program's own CPU work runs as ever.
"""

from __future__ import annotations

import torch

# The attributes of torch._C whose presence PyTorch's Python code reads as "built with CUDA".
_CUDA_ENTRY_POINTS = ("_cuda_getDeviceCount", "_cuda_init")
_hidden: dict[str, object] = {}


def is_cuda_build() -> bool:
    return bool(getattr(torch._C, "_has_cuda", False)) or hasattr(torch._C, "_cuda_getDeviceCount")


def enable() -> None:
    """Make this process's PyTorch a CPU-only build, as its Python layer sees it (idempotent)."""
    if _hidden or not is_cuda_build():
        return
    for name in _CUDA_ENTRY_POINTS:
        if hasattr(torch._C, name):
            _hidden[name] = getattr(torch._C, name)
            delattr(torch._C, name)
    _hidden["_has_cuda"] = torch._C._has_cuda
    torch._C._has_cuda = False
    _hidden["version.cuda"] = torch.version.cuda
    torch.version.cuda = None  # type: ignore[misc]
