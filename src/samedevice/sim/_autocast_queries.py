"""``torch.is_autocast_enabled("cuda")`` and its siblings, answered for the device that autocast
("cuda") really runs on in this run.

``torch.autocast("cuda")`` is autocast for the simulated device in a simulated run and for the
CPU in the CPU reference run, so CUDA's own autocast state stays off: a program asking
``torch.is_autocast_enabled("cuda")`` inside the block (Hugging Face models do, to pick the dtype
of their rotary embeddings and attention) was told False, and ``get_autocast_dtype("cuda")``
gave float16 under ``autocast("cuda", dtype=torch.bfloat16)``. On CUDA both follow the block.

Imports nothing from the simulator: each run says where "cuda" goes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

_UNSET: Any = object()


def install(where_cuda_runs: Callable[[], str]) -> None:
    """Answer the autocast queries for "cuda" (and the no-argument CUDA forms) with the state of
    ``where_cuda_runs()``'s device type (idempotent)."""
    if getattr(torch.is_autocast_enabled, "_samedevice", False):
        return

    def target(device_type: Any) -> Any:
        return where_cuda_runs() if device_type == "cuda" else device_type

    C = torch._C

    def is_autocast_enabled(device_type: Any = _UNSET) -> bool:
        return C.is_autocast_enabled(target("cuda" if device_type is _UNSET else device_type))

    def get_autocast_dtype(device_type: Any) -> torch.dtype:
        return C.get_autocast_dtype(target(device_type))

    def set_autocast_enabled(device_type: Any, enabled: Any = _UNSET) -> None:
        if enabled is _UNSET:  # the CUDA form: set_autocast_enabled(True)
            device_type, enabled = "cuda", device_type
        C.set_autocast_enabled(target(device_type), enabled)

    def set_autocast_dtype(device_type: Any, dtype: torch.dtype) -> None:
        C.set_autocast_dtype(target(device_type), dtype)

    answers: dict[str, Callable[..., Any]] = {
        "is_autocast_enabled": is_autocast_enabled,
        "get_autocast_dtype": get_autocast_dtype,
        "set_autocast_enabled": set_autocast_enabled,
        "set_autocast_dtype": set_autocast_dtype,
        "get_autocast_gpu_dtype": lambda: C.get_autocast_dtype(target("cuda")),
        "set_autocast_gpu_dtype": lambda dtype: C.set_autocast_dtype(target("cuda"), dtype),
    }
    for name, answer in answers.items():
        original = getattr(torch, name, None)
        if original is None:
            continue
        wrapped = functools.wraps(original)(answer)
        wrapped._samedevice = True  # type: ignore[attr-defined]
        setattr(torch, name, wrapped)
