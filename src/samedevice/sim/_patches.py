"""Operators and PyTorch entry points the generic kernel cannot serve as they are.

Each entry says what breaks without it (the study in ``shared/notes`` has the exact errors).
They are installed once, by ``_backend.register``.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import torch

from . import _kernel
from ._plumbing import from_cpu, repoint, set_geometry, set_storage, to_cpu
from ._plumbing import is_sim as _is_sim

aten = torch.ops.aten


def _cpu(t: torch.Tensor) -> torch.Tensor:
    return to_cpu(t) if _is_sim(t) else t


# -- transfers -------------------------------------------------------------------------------------


def _copy_from(self: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    """``copy_`` between devices lands here: a copy is a transfer, CUDA checks nothing."""
    _cpu(dst).copy_(_cpu(self), non_blocking)
    return dst


def _copy_from_and_resize(self: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    if dst.shape != self.shape:
        _resize_(dst, self.shape)
    return _copy_from(self, dst)


# -- geometry --------------------------------------------------------------------------------------


def _resize_(self: torch.Tensor, size: Any, memory_format: Any = None) -> torch.Tensor:
    """``resize_``: in place when the memory suffices, else new memory keeping the old bytes.

    (Meta's ``resize_`` kernel insists on meta tensors, so the geometry is computed here.)
    """
    size = [int(s) for s in size]
    layout = memory_format or torch.contiguous_format
    strides = torch.empty(size, device="meta", memory_format=layout).stride()
    offset = self.storage_offset()
    needed = offset + (sum((s - 1) * st for s, st in zip(size, strides, strict=True)) + 1 if all(size) else 0)
    capacity = self.untyped_storage().nbytes() // self.element_size()
    if needed <= capacity:
        set_geometry(self, size, strides, offset)
        return self
    old = to_cpu(self)
    fresh = torch.empty(size, dtype=self.dtype, memory_format=layout)
    n = min(old.numel(), fresh.numel())
    if n:
        fresh.view(-1)[:n].copy_(old.reshape(-1)[:n])
    repoint(self, fresh)
    return self


def _resize_output_(self: torch.Tensor, size: Any, device: Any) -> torch.Tensor:
    if list(self.shape) != list(size):
        if self.numel() != 0:
            warnings.warn(
                "An output with one or more elements was resized since it had shape "
                f"{list(self.shape)}, which does not match the required output shape {list(size)}. "
                "This behavior is deprecated, and in a future PyTorch release outputs will not be "
                "resized unless they have zero elements. You can explicitly reuse an out tensor t "
                "by resizing it, inplace, to zero elements with t.resize_(0).",
                UserWarning,
                stacklevel=2,
            )
        _resize_(self, size)
    return self


def _contiguous_strides(size: Any) -> list[int]:
    strides, acc = [], 1
    for s in reversed(list(size)):
        strides.append(acc)
        acc *= max(int(s), 1)
    return strides[::-1]


def _set_source_storage(self: torch.Tensor, source: Any) -> torch.Tensor:
    n = source.nbytes() // self.element_size()
    set_storage(self, source, 0, [n], [1])
    return self


def _set_source_storage_offset(
    self: torch.Tensor, source: Any, storage_offset: int, size: Any, stride: Any = ()
) -> torch.Tensor:
    stride = list(stride) if len(stride) else _contiguous_strides(size)
    set_storage(self, source, storage_offset, size, stride)
    return self


def _set_source_tensor(self: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    set_storage(self, source.untyped_storage(), source.storage_offset(), source.shape, source.stride())
    return self


def _set_empty(self: torch.Tensor) -> torch.Tensor:
    empty = from_cpu(torch.empty(0, dtype=self.dtype), self.get_device())
    set_storage(self, empty.untyped_storage(), 0, [0], [1])
    return self


# -- identity-preserving moves ---------------------------------------------------------------------


def _has_compatible_shallow_copy_type(self: torch.Tensor, other: torch.Tensor) -> bool:
    """``param.data = t`` and ``Module.to()`` keep Parameter objects when this is True.

    PyTorch answers True for two dense tensors of its in-tree devices (CPU and CUDA among
    them), so on CUDA ``model.to("cuda")`` keeps each ``nn.Parameter`` object and an optimizer
    built before the move still holds the model's parameters. PrivateUse1 is not on that
    list; saying yes for sim/CPU pairs gives the simulated device CUDA's behaviour.
    """
    devices_ok = all(t.device.type in ("cpu", "sim") for t in (self, other))
    return devices_ok and self.layout == other.layout == torch.strided


# -- indexing --------------------------------------------------------------------------------------


def _indices_rule(op: torch._ops.OpOverload):
    """``index``/``index_put_``: CPU indices are fine for an accelerator tensor, not the reverse."""
    spec_holder: list[_kernel.OpSpec] = []

    def kernel(self: torch.Tensor, indices: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        from . import _checks

        _checks.check_indices(self, indices)
        if not spec_holder:
            spec_holder.append(_kernel.spec_for(op))
        spec = spec_holder[0]
        if _is_sim(self):
            # CUDA moves the indices to the tensor's device; the value has its own rules.
            if args and isinstance(args[0], torch.Tensor):
                accumulate = bool(args[1] if len(args) > 1 else kwargs.get("accumulate", False))
                _checks.check_index_put_value(self, indices, args[0], accumulate)
            cpu_indices = [_cpu(i) if isinstance(i, torch.Tensor) else i for i in indices]
            cpu_args = [_cpu(a) if isinstance(a, torch.Tensor) else a for a in args]
            cpu_kwargs = {k: _cpu(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
            if spec.out_names:
                return _kernel.run(spec, (self, indices, *args), kwargs)
            result = op._op(to_cpu(self), cpu_indices, *cpu_args, **cpu_kwargs)
            if spec.returns and spec.returns[0] is not None:
                return self
            return from_cpu(result, self.get_device())
        return _kernel.run(spec, (self, indices, *args), kwargs)

    return kernel


# -- storages --------------------------------------------------------------------------------------


def _is_sim_device(device: Any) -> bool:
    try:
        return device is not None and torch.device(device).type == "sim"
    except (RuntimeError, TypeError):
        return False


def _new_sim_storage(nbytes: int, device: Any) -> torch.UntypedStorage:
    return torch.empty(int(nbytes), dtype=torch.uint8, device=device).untyped_storage()


def _patch_storages() -> None:
    """Storages on the sim device must be made through tensors.

    ``torch.UntypedStorage(n, device=...)`` asks the device's C++ allocator for memory, and a
    Python backend has none: PyTorch dereferences a null allocator and the process dies.
    ``torch.load(map_location=...)`` and ``storage.to(device)`` take that road.
    """
    import torch.storage as storage_module

    original_to = storage_module._to
    if getattr(original_to, "_samedevice", False):
        return

    def _to(self: Any, device: Any, non_blocking: bool = False) -> Any:
        if _is_sim_device(device) and self.device != torch.device(device):
            target = _new_sim_storage(self.nbytes(), device)
            target.copy_(self, non_blocking)
            return target
        return original_to(self, device, non_blocking)

    _to._samedevice = True  # type: ignore[attr-defined]
    storage_module._to = _to

    base_new = torch._C.StorageBase.__new__

    def __new__(cls: type, *args: Any, device: Any = None, **kwargs: Any) -> Any:
        if _is_sim_device(device):
            if not args:
                return _new_sim_storage(0, device)
            if isinstance(args[0], int) and len(args) == 1:
                return _new_sim_storage(args[0], device)
            cpu = base_new(cls, *args, **kwargs)
            return _to(cpu, device)
        return base_new(cls, *args, device=device, **kwargs) if device is not None else base_new(cls, *args, **kwargs)

    torch.UntypedStorage.__new__ = __new__  # type: ignore[method-assign]


# -- autograd --------------------------------------------------------------------------------------


def _single_threaded_backward() -> None:
    """Run backward passes on the calling thread, under the "cuda" alias when it started them.

    The autograd engine gives each accelerator device a worker thread, sized by the device
    guard's ``deviceCount()``, which Python backends cannot override (it is 1). Backward over
    ``sim:1`` tensors would index past that table; running the graph on the calling thread
    (the engine's own switch for this) avoids it and saves a thread hand-off per pass.

    ``torch.autograd.backward`` and ``grad`` look this function up in their module at each
    call; a copy of them made before this patch (with its own globals) would run the engine
    multithreaded again and fail its ``device_ready_queues_`` assert on ``sim:1``.

    On the calling thread, the hooks and ``autograd.Function.backward`` the engine runs see the
    mode stack of this call. ``loss.backward()`` reaches here through the alias's handler, with
    the alias popped: it is pushed again (``_alias.backward_mode``), so they see ``cuda:0``
    tensors as on a GPU. The kernels the engine calls shed it (``_kernel``).
    """
    import torch.autograd as autograd

    from . import _alias

    original = autograd._engine_run_backward
    if getattr(original, "_samedevice", False):
        return

    @functools.wraps(original)
    def run_backward(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        mode = _alias.backward_mode()
        with torch.autograd.set_multithreading_enabled(False):
            if mode is None:
                return original(*args, **kwargs)
            with mode:
                return original(*args, **kwargs)

    run_backward._samedevice = True  # type: ignore[attr-defined]
    autograd._engine_run_backward = run_backward


def install(aten_lib: torch.library.Library) -> None:
    special = _kernel.SPECIAL
    special[aten._copy_from.default] = _copy_from
    special[aten._copy_from_and_resize.default] = _copy_from_and_resize
    special[aten.resize_.default] = _resize_
    special[aten._resize_output_.default] = _resize_output_
    special[aten.set_.source_Storage] = _set_source_storage
    special[aten.set_.source_Storage_storage_offset] = _set_source_storage_offset
    special[aten.set_.source_Tensor] = _set_source_tensor
    special[aten.set_.default] = _set_empty
    for op in (aten.index.Tensor, aten.index.Tensor_out, aten.index_put_.default,
               aten.index_put.default, aten._index_put_impl_.default):
        special[op] = _indices_rule(op)
    # Direct registrations where a composite kernel would otherwise run first.
    for op in (aten.resize_.default, aten.index_put_.default, aten.index_put.default):
        name = op._schema.name.removeprefix("aten::")
        overload = op._schema.overload_name
        aten_lib.m.impl(f"{name}.{overload}" if overload else name, "PrivateUse1",
                        _kernel.kernel_for(op), False)
    aten_lib.m.impl("_has_compatible_shallow_copy_type", "AutogradPrivateUse1",
                    _kernel.hermetic(_has_compatible_shallow_copy_type), False)
    fallthrough = torch.library.Library("_", "IMPL")
    fallthrough.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    from ._backend import _libraries

    _libraries.append(fallthrough)
    _single_threaded_backward()
    _patch_storages()
    from . import _amp, _nn_kernels, _runtime

    _amp.patch_autocast()
    _nn_kernels.install(aten_lib)
    _runtime.install()
