"""Automatic mixed precision on the simulated device, with CUDA's casting rules.

``torch.autocast("cuda")`` enables autocast for the CUDA device type, and ATen's CUDA autocast
kernels cast only CUDA tensors; a Python backend gets no autocast kernels at all, so a
simulated run computed everything in float32 where a GPU computes matmuls in float16. Here:

* under the "cuda" alias, ``torch.autocast("cuda", ...)`` (and ``torch.cuda.amp.autocast``)
  becomes autocast for the simulated device, with the CUDA default dtype when none is given;
* kernels at the ``AutocastPrivateUse1`` key apply CUDA's policy to each operator
  (``_autocast_policy``: the lists, the casts, the banned ``binary_cross_entropy``).

The kernels are registered the first time autocast is constructed for the simulated device,
so ``enable()`` does not pay for them.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from . import _autocast_policy, _autocast_queries
from ._naming import BACKEND, SPELLING
from ._plumbing import is_sim

_SIM = _autocast_policy.AutocastDevice(torch._C.DispatchKey.AutocastPrivateUse1, BACKEND, is_sim)

_lock = threading.Lock()
_installed = False
_patched = False


def install_kernels() -> None:
    """Register CUDA's autocast policy for every listed operator at ``AutocastPrivateUse1``."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        from ._backend import _libraries

        lib = torch.library.Library("aten", "IMPL")
        for name, policy in _autocast_policy.cuda_policies().items():
            op = _autocast_policy.overload(name)
            if op is None:
                continue
            lib.impl(name, _autocast_policy.kernel(op, policy, _SIM), "AutocastPrivateUse1")
        _libraries.append(lib)
        _installed = True


def patch_autocast() -> None:
    """``torch.autocast("cuda")`` under the alias means autocast for the simulated device."""
    global _patched
    if _patched:
        return
    autocast = torch.amp.autocast_mode.autocast
    original = autocast.__init__

    def __init__(self: Any, device_type: str, dtype: torch.dtype | None = None,
                 enabled: bool = True, cache_enabled: bool | None = None) -> None:
        if device_type == "cuda" and SPELLING.alias_cuda:
            if dtype is None:
                dtype = torch.get_autocast_dtype("cuda")
            device_type = BACKEND
        if device_type == BACKEND:
            install_kernels()
        original(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    autocast.__init__ = __init__
    # CUDA's default lower precision (float16) is the simulated device's too, so that
    # `torch.get_autocast_dtype("cuda")`, answered for the simulated device, says what CUDA says.
    torch._C.set_autocast_dtype(BACKEND, torch._C.get_autocast_dtype("cuda"))
    _autocast_queries.install(lambda: BACKEND if SPELLING.alias_cuda else "cuda")
    _patched = True
