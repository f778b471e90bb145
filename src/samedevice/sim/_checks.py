"""CUDA's device checks, re-enacted for the simulated accelerator.

Each rule mirrors one place in PyTorch's C++ that raises a device error on CUDA:

* ``exact`` -- ``c10::impl::check_and_update_common_device`` in a generated CUDA wrapper: the
  first defined tensor sets the common device; the first tensor on another device is named.
* ``iter`` -- ``TensorIteratorBase::compute_types``: the common device is the first non-CPU
  operand; 0-dim CPU inputs ride along as scalars; the first operand elsewhere is reported.
* ``foreach`` -- a ``_foreach_*`` call on mixed devices leaves CUDA's fast path and runs the
  per-tensor op, which applies the TensorIterator rule at each index.
* :data:`KERNEL_CHECKS` -- the ``TORCH_CHECK``s on ``device()`` that a CUDA kernel (or the
  device-generic C++ it calls) makes *before* any TensorIterator, e.g. ``masked_fill__cuda``.
  One entry per operator overload, each citing its source in PyTorch 2.13.

The message strings are PyTorch 2.8+'s (the ones in this torch's ``libtorch_cpu.so``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch

from ._naming import device_text, dispatch_key_text

SAME_DEVICE = "Expected all tensors to be on the same device"


def exact_message(arg: str, device: torch.device, common: torch.device, wrapper: str) -> str:
    return (
        f"{SAME_DEVICE}, but got {arg} is on {device_text(device)}, different from other tensors "
        f"on {device_text(common)} (when checking argument in method "
        f"wrapper_{dispatch_key_text()}_{wrapper})"
    )


def iter_message(common: torch.device, other: torch.device) -> str:
    return (
        f"{SAME_DEVICE}, but found at least two devices, "
        f"{device_text(common)} and {device_text(other)}!"
    )


def check_exact(named: Iterable[tuple[str, torch.Tensor]], wrapper: str) -> None:
    __tracebackhide__ = True
    common = None
    for name, t in named:
        if common is None:
            common = t.device
        elif t.device != common:
            raise RuntimeError(exact_message(name, t.device, common, wrapper))


def check_iter(operands: Sequence[tuple[torch.Tensor, bool]]) -> None:
    """``operands`` are ``(tensor, is_output)`` in TensorIterator order (outputs first)."""
    __tracebackhide__ = True
    common = None
    for t, _ in operands:
        if not t.is_cpu:
            common = t.device
            break
    if common is None:
        return
    for t, is_output in operands:
        if t.device == common:
            continue
        if t.is_cpu and not is_output and t.dim() == 0:
            continue  # a CPU scalar tensor: CUDA kernels read it on the host
        raise RuntimeError(iter_message(common, t.device))


def check_indices(self: torch.Tensor, indices: Iterable[torch.Tensor | None]) -> None:
    """``check_indices_on_cpu_or_selfdevice`` from the meta function of ``aten::index``."""
    __tracebackhide__ = True
    dev = self.device
    for idx in indices:
        if isinstance(idx, torch.Tensor) and not (idx.is_cpu or idx.device == dev):
            raise RuntimeError(
                "indices should be either on cpu or on the same device as the indexed tensor "
                f"({device_text(dev)})"
            )


def generator_message(expected: str, found: str) -> str:
    return f"Expected a '{expected}' device type for generator but found '{found}'"


# -- checks inside CUDA kernels ---------------------------------------------------------------------
#
# Each function gets the operator's arguments as the dispatcher passed them and either raises
# CUDA's message or returns the rule that still applies afterwards: ``"iter"`` when the kernel
# goes on into a TensorIterator, ``"none"`` when it accepts the mix (reads a value with
# ``.item()``, moves it, ...). For ops with a generated check (``exact``), the generated check
# has already run: CUDA's wrapper checks before the kernel is entered.

KernelCheck = Callable[[tuple, dict], str]
ITER_AFTER = "iter"
ACCEPTED = "none"


def _arg(args: tuple, kwargs: dict, pos: int, name: str) -> object:
    return args[pos] if pos < len(args) else kwargs.get(name)


def _masked_fill_scalar(args: tuple, kwargs: dict) -> str:
    """``masked_fill__cuda(self, mask, Scalar)``, aten/src/ATen/native/cuda/Indexing.cu.

    The device check comes before everything else and knows no scalar exception: a 0-dim CPU
    mask fails like any other (the classic causal-mask bug: a plain tensor attribute left on
    the CPU by ``model.to("cuda")``).
    """
    __tracebackhide__ = True
    self, mask = args[0], args[1]
    if self.device != mask.device:
        raise RuntimeError(
            "expected self and mask to be on the same device, but got mask on "
            f"{device_text(mask.device)} and self on {device_text(self.device)}"
        )
    return ACCEPTED


def _masked_fill_tensor(args: tuple, kwargs: dict) -> str:
    """``masked_fill__cuda(self, mask, Tensor value)``: value must be 0-dim (then read with
    ``.item()``, so a CPU value is fine); self must not be on the CPU; then the Scalar overload."""
    __tracebackhide__ = True
    self, value = args[0], args[2]
    if value.dim() != 0:
        raise RuntimeError(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.dim()} dimension(s)."
        )
    if self.is_cpu:
        raise RuntimeError("masked_fill_: Expected inputs to be on same device")
    return _masked_fill_scalar(args, kwargs)


def _fill_tensor(args: tuple, kwargs: dict) -> str:
    """``fill_(self, Tensor value)``, aten/src/ATen/native/Fill.cpp: a value on another device
    is read with ``.item()`` -- in both directions."""
    __tracebackhide__ = True
    value = args[1]
    if value.dim() != 0:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} dimensions."
        )
    return ACCEPTED


def _index_fill(args: tuple, kwargs: dict) -> str:
    """``index_fill_``, aten/src/ATen/native/TensorAdvancedIndexing.cpp: the index is restrided
    to ``self``'s rank before the TensorIterator, so even a 0-dim CPU index is no scalar there.
    (The ``Tensor`` overload reads its 0-dim value with ``.item()``, from any device.)"""
    __tracebackhide__ = True
    self, index = args[0], args[2]
    if index.device != self.device:
        common, other = (index.device, self.device) if self.is_cpu else (self.device, index.device)
        raise RuntimeError(iter_message(common, other))
    return ACCEPTED


def _searchsorted(args: tuple, kwargs: dict) -> str:
    """``searchsorted_pre_check``, aten/src/ATen/native/BucketizationUtils.h. The generated check
    covers only positional tensors; the keyword-only ``sorter`` reaches this one."""
    __tracebackhide__ = True
    boundaries, value = args[0], args[1] if len(args) > 1 else None
    if isinstance(value, torch.Tensor) and boundaries.device != value.device:
        raise RuntimeError(
            "torch.searchsorted(): boundaries and input value tensors should have same device "
            f"type, but got boundaries tensor device type {device_text(boundaries.device)} and "
            f"input value tensor device type {device_text(value.device)}"
        )
    sorter = kwargs.get("sorter")
    if isinstance(sorter, torch.Tensor) and sorter.device != boundaries.device:
        raise RuntimeError(
            "torch.searchsorted(): sorter and boundary tensors should have same device type, "
            f"but got sorter tensor device type {device_text(sorter.device)} and input value "
            f"tensor device type {device_text(boundaries.device)}"
        )
    return ACCEPTED


def check_index_put_value(
    self: torch.Tensor, indices: Sequence[torch.Tensor | None], value: torch.Tensor, accumulate: bool
) -> None:
    """``_index_put_impl_``, aten/src/ATen/native/TensorAdvancedIndexing.cpp.

    Without ``accumulate`` a one-element CPU value with a boolean mask on ``self``'s device
    becomes ``masked_fill_`` (``canDispatchToMaskedFill``); a 0-dim value on another device is
    moved to ``self``'s; with ``accumulate`` on CUDA the sort-based kernel insists on the value's
    device; otherwise the TensorIterator rule applies.
    """
    __tracebackhide__ = True
    if value.device == self.device:
        return
    if not accumulate and _can_dispatch_to_masked_fill(self, indices, value):
        return
    if value.numel() == 1 and value.dim() == 0:
        return
    if accumulate and not self.is_cpu:
        raise RuntimeError(
            f"expected device {device_text(self.device)} but got device "
            f"{device_text(value.device)} for value tensor"
        )
    check_iter([(self, True), (value, False)])


def _can_dispatch_to_masked_fill(
    self: torch.Tensor, indices: Sequence[torch.Tensor | None], value: torch.Tensor
) -> bool:
    """``canDispatchToMaskedFill`` (ATen/native/TensorAdvancedIndexingUtils.h), device part."""
    if not (value.numel() == 1 and value.is_cpu):
        return False
    masks = 0
    for index in indices:
        if index is None:
            continue
        if index.dtype not in (torch.bool, torch.uint8) or index.device != self.device or masks:
            return False
        masks += 1
    return masks == 1


def _index_put(args: tuple, kwargs: dict) -> str:
    __tracebackhide__ = True
    accumulate = bool(_arg(args, kwargs, 3, "accumulate"))
    check_index_put_value(args[0], args[1], args[2], accumulate)
    return ACCEPTED


KERNEL_CHECKS: dict[str, KernelCheck] = {
    "masked_fill_.Scalar": _masked_fill_scalar,
    "masked_fill_.Tensor": _masked_fill_tensor,
    "fill_.Tensor": _fill_tensor,
    "index_fill_.int_Scalar": _index_fill,
    "index_fill_.int_Tensor": _index_fill,
    "index_put_": _index_put,
    "index_put": _index_put,
    "_index_put_impl_": _index_put,
    "searchsorted.Tensor": _searchsorted,
    "searchsorted.Tensor_out": _searchsorted,
    "searchsorted.Scalar": _searchsorted,
    "searchsorted.Scalar_out": _searchsorted,
}
