"""Registering the ``sim`` device with PyTorch: backend name, device module, kernels.

PyTorch lets one out-of-tree backend live at the PrivateUse1 dispatch key and, since 2.5,
lets it be written in Python (``torch.utils.backend_registration.
_setup_privateuseone_for_python_backend``). Registration is process-wide and cannot be undone,
so :func:`register` is idempotent and everything else in the package calls it lazily.
"""

from __future__ import annotations

import threading
import types
from typing import Any

import torch

from . import _fork, _kernel, _optable, _sparse
from ._naming import BACKEND, INVALID_ORDINAL, SPELLING

DEVICE_COUNT = 2  # sim:0 and sim:1 by default; the CUDA machine mode sets its GPU count

_lock = threading.Lock()
_registered = False
_libraries: list[torch.library.Library] = []  # kept alive: dropping them unregisters kernels
_state = threading.local()


def _amp_supported_dtypes() -> list[torch.dtype]:
    """What autocast accepts as its dtype. A PrivateUse1 device gets a check CUDA never does:
    ``autocast("cuda", dtype=torch.float32)`` is allowed on CUDA, so under the alias every
    floating dtype passes (the autocast lists then cast to it, as CUDA's do)."""
    if SPELLING.alias_cuda:
        return [torch.float16, torch.bfloat16, torch.float32, torch.float64]
    return [torch.float16, torch.bfloat16]


def set_device_count(n: int) -> None:
    """Give the simulated machine ``n`` GPUs (``torch.cuda.device_count()`` under the alias)."""
    global DEVICE_COUNT
    n = int(n)
    if not 1 <= n <= 16:
        raise ValueError(f"the simulated machine has 1 to 16 GPUs, not {n}")
    DEVICE_COUNT = n


def current_index() -> int:
    return getattr(_state, "index", 0)


def _set_index(index: int) -> None:
    index = int(index)
    if not 0 <= index < DEVICE_COUNT:
        if SPELLING.alias_cuda:
            raise torch.AcceleratorError(INVALID_ORDINAL)
        raise RuntimeError(f"Invalid device index {index}: the simulated accelerator has {DEVICE_COUNT} devices")
    _state.index = index


class _DeviceContext:
    """``torch.sim.device(i)``: make ``sim:i`` the current device inside a ``with`` block."""

    def __init__(self, device: Any) -> None:
        self.index = torch._utils._get_device_index(device, optional=True) if device is not None else -1

    def __enter__(self) -> None:
        self.previous = current_index()
        if self.index >= 0:
            _set_index(self.index)

    def __exit__(self, *exc: object) -> None:
        _set_index(self.previous)


def _make_device_module() -> types.ModuleType:
    """``torch.sim``: the per-backend module PyTorch looks up by name (``torch.cuda``'s twin)."""
    mod = types.ModuleType(f"torch.{BACKEND}", "The simulated accelerator's device module (samedevice).")

    def is_available() -> bool:
        return True

    def device_count() -> int:
        return DEVICE_COUNT

    def current_device() -> int:
        return current_index()

    def set_device(device: Any) -> None:
        _set_index(torch._utils._get_device_index(device, optional=True))

    def synchronize(device: Any = None) -> None:
        """Nothing runs asynchronously on the simulated device."""

    def manual_seed(seed: int) -> None:
        # The simulated device draws random numbers from the CPU generator, so that a
        # simulated run and a plain CPU run of the same program print the same numbers.
        torch.default_generator.manual_seed(int(seed))

    def manual_seed_all(seed: int) -> None:
        torch.default_generator.manual_seed(int(seed))

    def get_rng_state(device: Any = None) -> torch.Tensor:
        return torch.get_rng_state()

    def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
        torch.set_rng_state(state)

    def zero() -> int:
        return 0

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    for fn in (is_available, device_count, current_device, set_device, synchronize, manual_seed,
               manual_seed_all, get_rng_state, set_rng_state):
        setattr(mod, fn.__name__, fn)
    mod.is_initialized = is_available
    mod._is_in_bad_fork = _fork.is_in_bad_fork
    mod._lazy_init = nothing
    mod.device = _DeviceContext
    mod.seed = lambda: torch.default_generator.seed()
    mod.initial_seed = lambda: torch.default_generator.initial_seed()
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved"):
        setattr(mod, name, lambda device=None: 0)
    mod.empty_cache = nothing
    mod.reset_peak_memory_stats = nothing
    mod.get_amp_supported_dtype = _amp_supported_dtypes
    mod.zero = zero
    return mod


class _DeviceGuard(torch._C._acc.DeviceGuard):
    """PyTorch asks the guard for its device type on every guarded op; answer from a constant."""

    _TYPE = torch._C._autograd.DeviceType.PrivateUse1

    def type_(self):
        return self._TYPE


def _mirror_ops(facts: dict[str, _optable.OpFacts]) -> list[str]:
    """Operators CUDA runs as one kernel but a Python backend would decompose.

    An op with a CUDA kernel *and* a composite kernel (``CompositeExplicitAutograd`` or the
    ``...NonFunctional`` one torchgen makes for functional variants of structured ops) would
    reach a Python backend as its parts: ``addmm`` as ``empty`` + ``addmm.out``, and a device
    error would name the wrong argument of the wrong wrapper. Registering the kernel directly
    for these keeps CUDA's granularity.
    """
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    names = []
    for name, f in facts.items():
        if not f.has_cuda_kernel:
            continue
        qual = f"aten::{name}"
        try:
            if has(qual, "CompositeExplicitAutograd") or has(qual, "CompositeExplicitAutogradNonFunctional"):
                names.append(name)
        except RuntimeError:
            continue  # listed in the yaml but not built into this torch
    return names


def register() -> None:
    """Register the backend once per process (thread-safe, idempotent)."""
    global _registered
    if _registered:
        return
    with _lock:
        if _registered:
            return
        from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

        _setup_privateuseone_for_python_backend(
            BACKEND, backend_module=_make_device_module(), device_guard=_DeviceGuard()
        )
        facts = _kernel.load_facts()
        lib = torch.library.Library("_", "IMPL")
        lib.fallback(_kernel.fallback, "PrivateUse1")
        _sparse.register(lib)
        _libraries.append(lib)
        aten = torch.library.Library("aten", "IMPL")
        _libraries.append(aten)
        for name in _mirror_ops(facts):
            packet, _, overload = name.partition(".")
            op = getattr(getattr(torch.ops.aten, packet), overload or "default")
            aten.m.impl(name, "PrivateUse1", _kernel.kernel_for(op), False)
        from . import _patches

        _patches.install(aten)
        _registered = True


def is_registered() -> bool:
    return _registered
