"""How the simulated device is spelled in messages: ``sim:0`` or, with the CUDA alias, ``cuda:0``.

Error messages produced by the simulator are built from these helpers, so that with
``enable(alias_cuda=True)`` a page shows exactly the text a CUDA user sees.
"""

from __future__ import annotations

import re

import torch

BACKEND = "sim"


class _Spelling:
    alias_cuda = False


SPELLING = _Spelling()

_LEGACY_TYPE = {
    torch.float32: "Float",
    torch.float64: "Double",
    torch.float16: "Half",
    torch.bfloat16: "BFloat16",
    torch.int64: "Long",
    torch.int32: "Int",
    torch.int16: "Short",
    torch.int8: "Char",
    torch.uint8: "Byte",
    torch.bool: "Bool",
    torch.complex64: "ComplexFloat",
    torch.complex128: "ComplexDouble",
}


# torch.AcceleratorError's text for a device index past the last GPU (c10/cuda/CUDAException.h
# and CUDAMiscFunctions.cpp, PyTorch >= 2.8), raised under the alias as on a GPU machine.
INVALID_ORDINAL = (
    "CUDA error: invalid device ordinal\n"
    "GPU device may be out of range, do you have enough GPUs?\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)


def device_type_text() -> str:
    return "cuda" if SPELLING.alias_cuda else BACKEND


def dispatch_key_text() -> str:
    return "CUDA" if SPELLING.alias_cuda else "PrivateUse1"


def device_text(device: torch.device) -> str:
    """``str(device)`` with the simulated device spelled as the user expects."""
    if device.type == BACKEND:
        return f"{device_type_text()}:{device.index if device.index is not None else 0}"
    return str(device)


def type_text(t: torch.Tensor) -> str:
    """The legacy type name PyTorch prints in conv errors: ``torch.cuda.FloatTensor``."""
    name = _LEGACY_TYPE.get(t.dtype, str(t.dtype).removeprefix("torch.").capitalize())
    if t.device.type == "cpu":
        return f"torch.{name}Tensor"
    return f"torch.{device_text(t.device).split(':')[0]}.{name}Tensor"


_SIM_SPELLINGS = [
    (re.compile(rf"\b{BACKEND}:(\d+)"), r"cuda:\1"),
    (re.compile(rf"'{BACKEND}'"), "'cuda'"),
    (re.compile(rf"\btorch\.{BACKEND}\."), "torch.cuda."),
    (re.compile(r"\bPrivateUse1\b"), "CUDA"),
    (re.compile(rf"\bdevice type {BACKEND}\b"), "device type cuda"),
    (re.compile(rf"\btype='{BACKEND}'"), "type='cuda'"),
]


def respell(text: str) -> str:
    """Rewrite sim spellings in a message from PyTorch itself into CUDA's, under the alias."""
    if not SPELLING.alias_cuda:
        return text
    for pattern, repl in _SIM_SPELLINGS:
        text = pattern.sub(repl, text)
    return text
