"""GPU tensors sent to other processes share their memory, as CUDA IPC shares device memory.

On CUDA, a tensor pickled for a ``torch.multiprocessing`` child travels as an IPC handle: the
child maps the same device memory, so what a Hogwild worker writes into a model's parameters
the parent reads (pytorch/examples ``mnist_hogwild``), and ``share_memory_()`` of a CUDA
tensor is a no-op. A simulated GPU tensor's memory is ordinary host memory that no other
process can see, and PyTorch refused to pickle it (``_share_fd_: only available on CPU``).

Here a simulated tensor being shared is first moved, in place, into POSIX shared memory: a CPU
storage made shareable by PyTorch's own ``share_memory_()`` holds its bytes, and the tensor is
pointed at a simulated storage over that memory. Pickling sends the CPU view through PyTorch's
CPU reductions (a file descriptor), and the child wraps it as a simulated tensor on the same
GPU index -- both processes then read and write the same bytes. Only the tensor object that is
shared follows (other views of its old storage keep the old memory); ``share_memory_()`` on a
freshly made model, as Hogwild programs call it, covers every parameter and buffer.
"""

from __future__ import annotations

from typing import Any

import torch

from ._plumbing import from_cpu, is_sim, set_storage, to_cpu

Tensor = torch.Tensor

# data_ptr of a simulated storage in shared memory -> the CPU byte tensor that owns the memory
_SHARED: dict[int, Tensor] = {}


def _storage_bytes(t: Tensor) -> Tensor:
    """A CPU uint8 tensor over all of sim tensor ``t``'s storage."""
    storage = t.untyped_storage()
    whole = torch.empty(0, dtype=torch.uint8, device=t.device)
    set_storage(whole, storage, 0, (storage.nbytes(),), (1,))
    return to_cpu(whole)


def share(t: Tensor) -> Tensor:
    """Move sim tensor ``t`` into shared memory, in place (a no-op once it is there)."""
    if t.untyped_storage().data_ptr() in _SHARED:
        return t
    with torch._C.DisableTorchFunction():
        host = torch.empty(t.untyped_storage().nbytes(), dtype=torch.uint8)
        host.share_memory_()
        host.copy_(_storage_bytes(t))
        shared = from_cpu(host, t.get_device()).untyped_storage()
        _SHARED[shared.data_ptr()] = host
        set_storage(t, shared, t.storage_offset(), t.shape, t.stride())
    return t


def _cpu_view(t: Tensor) -> Tensor:
    host = _SHARED[t.untyped_storage().data_ptr()]
    view = torch.empty(0, dtype=t.dtype)
    view.set_(host.untyped_storage(), t.storage_offset(), t.shape, t.stride())
    return view


def rebuild(cls: type, cpu_view: Tensor, index: int, requires_grad: bool) -> Tensor:
    """In the receiving process: a sim tensor on GPU ``index`` over the shared CPU memory."""
    with torch._C.DisableTorchFunction():
        base = torch.empty(0, dtype=torch.uint8)
        base.set_(cpu_view.untyped_storage())
        whole = from_cpu(base, index)
        _SHARED[whole.untyped_storage().data_ptr()] = base  # it can be sent on from here
        t = torch.empty(0, dtype=cpu_view.dtype, device=whole.device)
        set_storage(t, whole.untyped_storage(), cpu_view.storage_offset(), cpu_view.shape, cpu_view.stride())
    if cls is torch.nn.Parameter:
        return torch.nn.Parameter(t, requires_grad=requires_grad)
    return t.requires_grad_(requires_grad) if requires_grad else t


def reduce(t: Tensor, fallback: Any) -> Any:
    """``ForkingPickler``'s reduction for tensors: sim tensors by shared memory, others as before."""
    with torch._C.DisableTorchFunction():
        if not is_sim(t):
            return fallback(t)
        share(t)
        cls = torch.nn.Parameter if isinstance(t, torch.nn.Parameter) else Tensor
        return rebuild, (cls, _cpu_view(t), t.get_device(), t.requires_grad)


_installed = False


def install() -> None:
    """Register the reduction for tensors and parameters, and CUDA's ``share_memory_`` and
    ``is_shared`` for simulated tensors (idempotent)."""
    global _installed
    if _installed:
        return
    import functools
    from multiprocessing.reduction import ForkingPickler

    from torch.multiprocessing import reductions

    original = reductions.reduce_tensor

    def reduce_tensor(t: Tensor) -> Any:
        return reduce(t, original)

    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(torch.nn.Parameter, reduce_tensor)

    share_memory_ = Tensor.share_memory_
    is_shared = Tensor.is_shared

    @functools.wraps(share_memory_)
    def share_memory(self: Tensor) -> Tensor:
        with torch._C.DisableTorchFunction():
            on_sim = is_sim(self)
        return share(self) if on_sim else share_memory_(self)

    @functools.wraps(is_shared)
    def shared(self: Tensor) -> bool:
        with torch._C.DisableTorchFunction():
            if is_sim(self):
                return True  # as a CUDA tensor answers: it is shared by IPC when sent
        return is_shared(self)

    Tensor.share_memory_ = share_memory  # type: ignore[method-assign]
    Tensor.is_shared = shared  # type: ignore[method-assign]
    _installed = True
