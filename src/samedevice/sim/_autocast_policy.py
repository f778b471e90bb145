"""CUDA's autocast policy, as kernels for whichever autocast key the run computes under.

Both runs of a program cast as CUDA does under ``torch.autocast("cuda")``: the simulated run at
the ``AutocastPrivateUse1`` key (``_amp``), the CPU reference run (``--cpu``) at ``AutocastCPU``
(``_cpu_mode``), whose own lists differ from CUDA's (CPU autocast computes softmax, layer_norm,
exp and sum in the lower precision; CUDA computes them in float32), so a reference run with the
CPU's lists computes other numbers than the GPU would.

The op lists are read from ``ATen/autocast_mode.h``, which every torch wheel ships in
``torch/include`` (the ``AT_FORALL_*`` macros "so other backends can reuse the policy op
list") -- the same lists ATen registers for ``AutocastCUDA`` in ``autocast_mode.cpp``. The casts
mirror ``cached_cast`` and ``promote_type`` in ``autocast_mode.h``: only floating-point tensors
of the autocast device that are not float64 are cast; the weight cache is an optimisation with
no effect on results, and is left out. ``binary_cross_entropy`` is banned under CUDA autocast:
its kernel calls ATen's own banned kernel (registered for ``AutocastCUDA``; it raises without
looking at its arguments), so the message is PyTorch's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

Tensor = torch.Tensor
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


def cuda_policies() -> dict[str, str]:
    return parse_policies(header_path().read_text())


def overload(name: str) -> torch._ops.OpOverload | None:
    packet, _, overload_name = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload_name or "default", None)


class AutocastDevice:
    """Where a policy kernel runs: its autocast key, the device type whose autocast dtype it
    reads, and which tensors it casts (those of that device)."""

    def __init__(self, key: torch._C.DispatchKey, device_type: str, on_device: Callable[[Tensor], bool]) -> None:
        self.keys = torch._C.DispatchKeySet(key)
        self.device_type = device_type
        self.on_device = on_device

    def eligible(self, value: Any) -> bool:
        return (isinstance(value, Tensor) and value.is_floating_point()
                and value.dtype != torch.float64 and self.on_device(value))

    def cast(self, value: Any, dtype: torch.dtype) -> Any:
        if isinstance(value, Tensor):
            return value.to(dtype) if self.eligible(value) and value.dtype != dtype else value
        if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
            return type(value)(self.cast(v, dtype) for v in value)
        return value

    def promote_type(self, lower: torch.dtype, values: Any) -> torch.dtype:
        """``promote_type``/``prioritize``: float32 wins over the lower precision; float64 is ignored."""
        to_type = lower
        for v in values:
            for t in v if isinstance(v, (list, tuple)) else (v,):
                if self.eligible(t) and t.dtype == torch.float32:
                    to_type = torch.float32
        return to_type


def kernel(op: torch._ops.OpOverload, policy: str, where: AutocastDevice) -> Callable[..., Any]:
    """The autocast kernel of ``op`` under CUDA's ``policy``, for the autocast key of ``where``."""
    schema_args = op._schema.arguments
    dtype_pos = next((i for i, a in enumerate(schema_args) if a.name == "dtype"), None)
    dtype_kwarg_only = dtype_pos is not None and schema_args[dtype_pos].kwarg_only
    target = None
    if policy == FP32_APPEND_DTYPE:
        target = overload(_APPEND_DTYPE[op._schema.name.removeprefix("aten::") + "." + op._schema.overload_name])
    cast = where.cast

    def autocast_kernel(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        # Called from the dispatcher, a kernel has left the torch-function modes behind only
        # when the op was called from Python; from the autograd engine it runs under them (the
        # CPU reference run's own mode among them), and its ops would re-enter them.
        if torch._C._is_torch_function_mode_enabled():
            with torch._C.DisableTorchFunction():
                return cast_and_call(args, kwargs)
        return cast_and_call(args, kwargs)

    def cast_and_call(args: tuple, kwargs: dict) -> Any:
        __tracebackhide__ = True
        if policy == BANNED:
            return op._handle.redispatch_boxed(_AUTOCAST_CUDA, *args, **kwargs)
        with torch._C._ExcludeDispatchKeyGuard(where.keys):
            if policy == LOWER:
                dtype = torch.get_autocast_dtype(where.device_type)
                return op(*(cast(a, dtype) for a in args), **{k: cast(v, dtype) for k, v in kwargs.items()})
            if policy == FP32:
                return op(*(cast(a, torch.float32) for a in args),
                          **{k: cast(v, torch.float32) for k, v in kwargs.items()})
            if policy == PROMOTE:
                dtype = where.promote_type(torch.get_autocast_dtype(where.device_type), (*args, *kwargs.values()))
                return op(*(cast(a, dtype) for a in args), **{k: cast(v, dtype) for k, v in kwargs.items()})
            first_eligible = bool(args) and where.eligible(args[0])
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

    _run_as_is(autocast_kernel.__code__, cast_and_call.__code__)
    return autocast_kernel


def _run_as_is(*codes: Any) -> None:
    """Dynamo neither traces nor compiles these frames (``torch.compiler.disable`` does this,
    but importing dynamo at start-up costs a second). An autocast kernel runs while compiled
    code runs, under Dynamo's frame hook; compiled, its guard object is a builtin Dynamo cannot
    trace, and it warned "Dynamo does not know how to trace the builtin pybind11_object.__new__"."""
    frames = torch._C._dynamo.eval_frame
    action = getattr(frames, "_FrameAction", None)
    if action is None or not hasattr(frames, "set_code_exec_strategy"):
        return
    for code in codes:
        frames.set_code_exec_strategy(code, frames._FrameExecStrategy(action.SKIP, action.SKIP))
