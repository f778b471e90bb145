"""The plain-CPU reference run: the same program, with every "cuda" read as "cpu".

``verify`` proves a fixed snippet by running it twice -- on the simulated accelerator and on
the plain CPU -- and comparing what it computed. Snippets say ``"cuda"`` as their users did,
so the reference run maps CUDA device specs (``device="cuda"``, ``.cuda()``, ``.to("cuda:1")``,
``torch.Generator(device="cuda")``, ``map_location="cuda"``, ``backend="nccl"``) to the CPU.
The simulator's kernels are not loaded in this mode; the CUDA machine's ``torch.cuda``
answers are (``_machine.install(target="cpu")``), so a program takes the same path as in the
simulated run: ``torch.cuda.is_available()`` is True, streams and events work, a bare
``DataParallel`` stays on one device, ``torch.compile`` uses ``aot_eager`` as the simulated run does.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

Tensor = torch.Tensor
_CPU = torch.device("cpu")
# Module.to(0) parses its arguments with _parse_to: a bare ordinal there is the accelerator too
_POSITIONAL_DEVICE = {Tensor.to, Tensor.pin_memory, torch._C._nn._parse_to}


def _to_cpu_spec(value: Any) -> Any:
    if isinstance(value, str) and (value == "cuda" or value.startswith("cuda:")):
        return _CPU
    if isinstance(value, int) and not isinstance(value, bool):
        return _CPU  # a bare ordinal names the accelerator: GPU 0 on a CUDA machine
    if isinstance(value, torch.device) and value.type == "cuda":
        return _CPU
    return value


def _cuda_legacy_dtype(target: Any) -> torch.dtype | None:
    """The dtype of ``torch.cuda.FloatTensor`` (the class or its name), else None."""
    from ._cuda_api import _LEGACY

    if isinstance(target, str):
        return _LEGACY.get(target.removeprefix("torch.cuda.")) if target.startswith("torch.cuda.") else None
    if getattr(target, "__module__", None) == "torch.cuda":
        return _LEGACY.get(getattr(target, "__name__", ""))
    return None


class CpuReference(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is Tensor.cuda:
            return args[0].to(_CPU)
        if func is torch.device and len(args) == 1 and not kwargs:
            return _to_cpu_spec(args[0]) if isinstance(args[0], int) else func(*args)
        if func is Tensor.record_stream:
            return None  # CPU work is finished when the call returns: nothing to protect
        if func is Tensor.pin_memory:
            return _pinned_copy(args[0])
        if func is Tensor.is_pinned:
            return _is_pinned(args[0])
        if kwargs.get("pin_memory"):  # torch.empty(..., pin_memory=True): pinned host memory
            kwargs = dict(kwargs, pin_memory=False)
            return _mark_pinned(func(*args, **kwargs))
        if func is Tensor.type and len(args) > 1:
            dtype = _cuda_legacy_dtype(args[1])
            if dtype is not None:  # x.type(torch.cuda.FloatTensor): the cast, on the CPU
                return args[0].to(dtype)
        if "device" in kwargs:
            kwargs = dict(kwargs)
            kwargs["device"] = _to_cpu_spec(kwargs["device"])
        if func in _POSITIONAL_DEVICE and args:
            args = tuple(_to_cpu_spec(a) for a in args)
        return func(*args, **kwargs)


# Pinning asks the accelerator for page-locked memory, which a CPU wheel (no accelerator) and a
# CUDA wheel without a driver both refuse. In this run host memory stands in for it: the copy
# `pin_memory()` makes, remembered (by identity, weakly) so that `is_pinned()` answers as on CUDA.
_PINNED: dict[int, weakref.ref[Tensor]] = {}


def _mark_pinned(tensor: Any) -> Any:
    if isinstance(tensor, Tensor):
        key = id(tensor)
        _PINNED[key] = weakref.ref(tensor, lambda _ref, key=key: _PINNED.pop(key, None))
    return tensor


def _pinned_copy(tensor: Tensor) -> Tensor:
    if _is_pinned(tensor):
        return tensor  # as on CUDA: pinning a pinned tensor returns it
    with torch._C.DisableTorchFunction():
        return _mark_pinned(tensor.clone())


def _is_pinned(tensor: Tensor) -> bool:
    ref = _PINNED.get(id(tensor))
    return ref is not None and ref() is tensor


_mode: CpuReference | None = None


def enable(gpus: int | None = None) -> None:
    """Start the reference run in this process: a CUDA machine with ``gpus`` GPUs (default 1,
    as in the simulated run), whose "GPU" tensors are CPU tensors."""
    global _mode
    if _mode is not None:
        return
    from . import _accelerator, _backend, _machine, _threads, _warnings

    _backend.set_device_count(1 if gpus is None else gpus)
    _mode = CpuReference()
    _mode.__enter__()
    _machine.install(target="cpu")
    _accelerator.install_cpu_reference()
    _warnings.install()
    _warnings.quiet_triton_note()
    _threads.follow(CpuReference)
    _patch_data_parallel()
    _patch_compile()
    _patch_autocast()
    _patch_generator()
    _patch_load()
    _patch_distributed()


def _patch_data_parallel() -> None:
    """``DataParallel`` over the CPU: the module runs as it is (its one-device path)."""
    import importlib

    data_parallel = importlib.import_module("torch.nn.parallel.data_parallel")
    data_parallel._get_available_device_type = lambda: None


def _patch_compile() -> None:
    """Compile as the simulated run does (``aot_eager``), so both compute the same thing."""
    original = torch.compile

    @functools.wraps(original)
    def compile(model: Any = None, *args: Any, backend: Any = "inductor", **kwargs: Any) -> Any:
        return original(model, *args, backend="aot_eager" if backend == "inductor" else backend, **kwargs)

    torch.compile = compile


def _patch_autocast() -> None:
    """``torch.autocast("cuda", dtype)`` casts the CPU tensors as CUDA's autocast casts GPU ones.

    It becomes CPU autocast (the ``AutocastCPU`` key is what the dispatcher consults for CPU
    tensors), and the first time, that key's kernels are replaced by CUDA's policy
    (``_autocast_policy``): CPU autocast's own lists compute softmax, layer_norm, exp and sum in
    the lower precision where CUDA computes float32, and the reference run would compute other
    numbers than the GPU (nanoGPT's losses differed in the fourth digit).
    """
    from torch.amp import autocast_mode

    from . import _autocast_queries

    original = autocast_mode.autocast.__init__

    @functools.wraps(original)
    def __init__(self: Any, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: Any = None) -> None:
        if device_type == "cuda":
            device_type = "cpu"
            _install_cuda_policy_on_cpu()
            if dtype == torch.float32:
                # CUDA accepts float32 (its lists then cast to float32: nothing changes for
                # float32 inputs); CPU autocast warns "not supported" and disables itself.
                # Disabled here without the warning, which CUDA never prints.
                enabled = False
        original(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    autocast_mode.autocast.__init__ = __init__  # type: ignore[method-assign]
    # autocast("cuda") without a dtype is float16 on CUDA; the CPU's default is bfloat16.
    torch._C.set_autocast_dtype("cpu", torch._C.get_autocast_dtype("cuda"))
    _autocast_queries.install(lambda: "cpu")


_cuda_policy_libraries: list[torch.library.Library] = []  # kept alive: dropping them unregisters


def _install_cuda_policy_on_cpu() -> None:
    """Every ``AutocastCPU`` kernel casts as the ``AutocastCUDA`` one would (once per process).

    The reference run has no CPU autocast of its own to keep: "cpu" in the program meant "cuda".
    """
    if _cuda_policy_libraries:
        return
    from . import _autocast_policy

    where = _autocast_policy.AutocastDevice(torch._C.DispatchKey.AutocastCPU, "cpu",
                                            lambda t: t.device.type == "cpu")
    lib = torch.library.Library("aten", "IMPL")
    policies = _autocast_policy.cuda_policies()
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    with warnings.catch_warnings():
        # "Overriding a previously registered kernel": the point, said once per process
        warnings.simplefilter("ignore")
        for name, policy in policies.items():
            op = _autocast_policy.overload(name)
            if op is not None:
                lib.impl(name, _autocast_policy.kernel(op, policy, where), "AutocastCPU")
        for qualified in torch._C._dispatch_get_all_op_names():
            name = qualified.removeprefix("aten::")
            if name != qualified and name not in policies and has(qualified, "AutocastCPU"):
                # as AutocastCUDA has no kernel for it: fall through (a composite op then
                # decomposes, and its parts are cast by their own policy)
                lib.impl(name, torch.library.fallthrough_kernel, "AutocastCPU")
    _cuda_policy_libraries.append(lib)


def _patch_generator() -> None:
    base = torch._C.Generator

    class _Meta(type(base)):  # type: ignore[misc]
        def __instancecheck__(cls, obj: object) -> bool:
            return isinstance(obj, base)

    class Generator(base, metaclass=_Meta):
        def __new__(cls, device: Any = None) -> Any:
            device = _to_cpu_spec(device)
            return base.__new__(cls, device=device) if device is not None else base.__new__(cls)

    torch.Generator = Generator  # type: ignore[misc]


def _patch_load() -> None:
    original = torch.load

    @functools.wraps(original)
    def load(*args: Any, map_location: Any = None, **kwargs: Any) -> Any:
        if map_location is None or _to_cpu_spec(map_location) is _CPU:
            map_location = "cpu"
        return original(*args, map_location=map_location, **kwargs)

    torch.load = load


def _patch_distributed() -> None:
    import torch.distributed as dist

    if not dist.is_available():
        return
    from . import dist as simulated_dist

    simulated_dist.register()
    original = dist.init_process_group

    @functools.wraps(original)
    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(backend, str) and "nccl" in backend.lower():
            # the simulated run's group over CPU tensors: both runs tear Gloo down alike
            backend = simulated_dist.REFERENCE_NAME
        return original(backend, *args, **kwargs)

    dist.init_process_group = init_process_group
    _patch_ddp_device_ids()


def _patch_ddp_device_ids() -> None:
    """``DDP(model, device_ids=[rank])`` of a model that "cuda" put on the CPU.

    PyTorch refuses device_ids for a CPU module ("device_ids and output_device arguments only
    work with single-device/multiple-device GPU modules or CPU modules"); the program named its
    rank's GPU, which in this run is the CPU, so they are dropped, as a CPU program passes none.
    """
    from torch.nn.parallel import DistributedDataParallel

    original = DistributedDataParallel.__init__

    @functools.wraps(original)
    def __init__(self: Any, module: Any, device_ids: Any = None, output_device: Any = None,
                 *args: Any, **kwargs: Any) -> None:
        if isinstance(module, torch.nn.Module) and all(p.device.type == "cpu" for p in module.parameters()):
            device_ids = output_device = None
        original(self, module, device_ids, output_device, *args, **kwargs)

    DistributedDataParallel.__init__ = __init__  # type: ignore[method-assign]
