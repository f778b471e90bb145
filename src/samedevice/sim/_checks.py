"""CUDA's device checks, re-enacted for the simulated accelerator.

Each rule mirrors one place in PyTorch's C++ that raises a device error on CUDA:

* ``exact`` -- ``c10::impl::check_and_update_common_device`` in a generated CUDA wrapper: the
  first defined tensor sets the common device; the first tensor on another device is named.
* ``iter`` -- ``TensorIteratorBase::compute_types``: the common device is the first non-CPU
  operand; 0-dim CPU inputs ride along as scalars; the first operand elsewhere is reported.
* ``foreach`` -- a ``_foreach_*`` call on mixed devices leaves CUDA's fast path and runs the
  per-tensor op, which applies the TensorIterator rule at each index.

The message strings are PyTorch 2.8+'s (the ones in this torch's ``libtorch_cpu.so``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
