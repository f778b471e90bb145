"""Automatic mixed precision on the simulated device, with CUDA's casting rules.

``torch.autocast("cuda")`` enables autocast for the CUDA device type, and ATen's CUDA autocast
kernels cast only CUDA tensors; a Python backend gets no autocast kernels at all, so a
simulated run computed everything in float32 where a GPU computes matmuls in float16. Here:

* under the "cuda" alias, ``torch.autocast("cuda", ...)`` (and ``torch.cuda.amp.autocast``)
  becomes autocast for the simulated device, with the CUDA default dtype when none is given;
* kernels at the ``AutocastPrivateUse1`` key apply CUDA's policy to each operator. The op lists
  are read from ``ATen/autocast_mode.h``, which every torch wheel ships in ``torch/include``
  (the ``AT_FORALL_*`` macros "so other backends can reuse the policy op list") -- the same
  lists ATen registers for ``AutocastCUDA`` in ``autocast_mode.cpp``;
* ``binary_cross_entropy`` is banned under CUDA autocast: the kernel calls ATen's own banned
  kernel (registered for ``AutocastCUDA``; it raises without looking at its arguments), so
  the message is PyTorch's.

The kernels are registered the first time autocast is constructed for the simulated device,
so ``enable()`` does not pay for them. The casts mirror ``cached_cast`` and ``promote_type`` in
``autocast_mode.h``: only floating-point tensors on the simulated device that are not float64
are cast; the weight cache is an optimisation with no effect on results, and is left out.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import torch

from . import _autocast_queries
from ._kernel import hermetic
from ._naming import BACKEND, SPELLING
from ._plumbing import is_sim

Tensor = torch.Tensor
_AUTOCAST_SIM = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)
_AUTOCAST_CUDA = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCUDA)

LOWER = "lower_precision_fp"
FP32 = "fp32"
FP32_SET_OPT_DTYPE = "fp32_set_opt_dtype"
FP32_APPEND_DTYPE = "fp32_append_dtype"
PROMOTE = "promote"
BANNED = "banned"

_MACROS = {
    "AT_FORALL_LOWER_PRECISION_FP": LOWER,
    "AT_FORALL_FP32": FP32,
    "AT_FORALL_FP32_SET_OPT_DTYPE": FP32_SET_OPT_DTYPE,
    "AT_FORALL_PROMOTE": PROMOTE,
}
# AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE: norm without a dtype is redispatched to its dtype
# overload (the macro spells C++ signatures, so the pairs are written out here).
_APPEND_DTYPE = {"norm.Scalar": "norm.ScalarOpt_dtype", "norm.ScalarOpt_dim": "norm.ScalarOpt_dim_dtype"}
# Registered by hand for AutocastCUDA in autocast_mode.cpp.
_CUDA_BANNED = ("binary_cross_entropy",)

_lock = threading.Lock()
_installed = False
_patched = False


def header_path() -> Path:
    return Path(torch.__file__).parent / "include" / "ATen" / "autocast_mode.h"


def parse_policies(text: str) -> dict[str, str]:
    """``{"mm": "lower_precision_fp", "softmax.int": "fp32_set_opt_dtype", ...}`` from the header."""
    policies: dict[str, str] = {}
    for macro, policy in _MACROS.items():
        m = re.search(rf"#define {macro}\(_\)((?:[^\n]*\\\n)*[^\n]*)", text)
        if m is None:
            raise RuntimeError(f"{macro} not found in ATen/autocast_mode.h: this torch is not supported")
        for name, overload in re.findall(r"_\((\w+)(?:,\s*(\w+))?\)", m.group(1)):
            policies[f"{name}.{overload}" if overload else name] = policy
    for name in _APPEND_DTYPE:
        policies[name] = FP32_APPEND_DTYPE
    for name in _CUDA_BANNED:
        policies[name] = BANNED
    return policies


# -- casting ------------------------------------------------------------------------------------


def _eligible(value: Any) -> bool:
    return (isinstance(value, Tensor) and value.is_floating_point()
            and value.dtype != torch.float64 and is_sim(value))


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, Tensor):
        return value.to(dtype) if _eligible(value) and value.dtype != dtype else value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _promote_type(lower: torch.dtype, values: Any) -> torch.dtype:
    """``promote_type``/``prioritize``: float32 wins over the lower precision; float64 is ignored."""
    to_type = lower
    for v in values:
        for t in v if isinstance(v, (list, tuple)) else (v,):
            if _eligible(t) and t.dtype == torch.float32:
                to_type = torch.float32
    return to_type


def _kernel(op: torch._ops.OpOverload, policy: str) -> Any:
    schema_args = op._schema.arguments
    dtype_pos = next((i for i, a in enumerate(schema_args) if a.name == "dtype"), None)
    dtype_kwarg_only = dtype_pos is not None and schema_args[dtype_pos].kwarg_only
    target = None
    if policy == FP32_APPEND_DTYPE:
        packet, _, overload = _APPEND_DTYPE[op._schema.name.removeprefix("aten::") + "." + op._schema.overload_name].partition(".")
        target = getattr(getattr(torch.ops.aten, packet), overload)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if policy == BANNED:
            return op._handle.redispatch_boxed(_AUTOCAST_CUDA, *args, **kwargs)
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_SIM):
            if policy == LOWER:
                dtype = torch.get_autocast_dtype(BACKEND)
                return op(*(_cast(a, dtype) for a in args), **{k: _cast(v, dtype) for k, v in kwargs.items()})
            if policy == FP32:
                return op(*(_cast(a, torch.float32) for a in args),
                          **{k: _cast(v, torch.float32) for k, v in kwargs.items()})
            if policy == PROMOTE:
                dtype = _promote_type(torch.get_autocast_dtype(BACKEND), (*args, *kwargs.values()))
                return op(*(_cast(a, dtype) for a in args), **{k: _cast(v, dtype) for k, v in kwargs.items()})
            first_eligible = bool(args) and _eligible(args[0])
            if policy == FP32_APPEND_DTYPE:
                return target(*args, torch.float32, **kwargs) if first_eligible else op(*args, **kwargs)
            # FP32_SET_OPT_DTYPE: an explicit dtype wins; otherwise compute in float32
            if first_eligible and dtype_pos is not None:
                if dtype_kwarg_only or dtype_pos >= len(args):
                    if kwargs.get("dtype") is None:
                        kwargs = {**kwargs, "dtype": torch.float32}
                elif args[dtype_pos] is None:
                    args = (*args[:dtype_pos], torch.float32, *args[dtype_pos + 1:])
            return op(*args, **kwargs)

    return kernel


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
        for name, policy in parse_policies(header_path().read_text()).items():
            packet, _, overload = name.partition(".")
            op = getattr(getattr(torch.ops.aten, packet), overload or "default", None)
            if op is None:
                continue
            lib.impl(name, hermetic(_kernel(op, policy)), "AutocastPrivateUse1")
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
