"""``torch.cuda``'s device, memory, random-number, legacy-type and profiling calls, answered for
the simulated GPUs, and the calls refused because no simulation can stand in for them."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch

from . import _backend, _fork
from ._memory import TRACKER
from ._naming import BACKEND
from ._registry import (
    CUDA_VERSION,
    CUDNN_VERSION,
    GPU,
    REGISTRY,
    STATE,
    Entry,
    SimulatedGPU,
    device_index,
    emulates,
    home,
    refuse,
    value,
)

# -- devices ----------------------------------------------------------------------------------------


@emulates("torch.cuda.is_available", "True; like CUDA's runtime check it makes later forks bad forks (see "
          "`torch.cuda._is_in_bad_fork`) unless `PYTORCH_NVML_BASED_CUDA_CHECK=1`")
def is_available() -> bool:
    if os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK") != "1":
        _fork.touch_runtime()  # cudaGetDeviceCount: PyTorch registers its fork handler
    return True


@emulates("torch.cuda.device_count", "N, the number of simulated GPUs (`--gpus N`, default 1); equals `torch.accelerator.device_count()`")
def device_count() -> int:
    return _backend.DEVICE_COUNT


value("torch.cuda.is_initialized", "True once the program used the simulated GPU (a tensor made on or moved to it, "
      "or a `torch.cuda` call that initialises CUDA), False before and in a bad fork", _fork.is_initialized)
value("torch.cuda.init", "initialises the simulated CUDA (see `_lazy_init`)", _fork.lazy_init)
value("torch.cuda._lazy_init", "CUDA's lazy initialisation: in a process forked after the parent touched CUDA it raises "
      "`Cannot re-initialize CUDA in forked subprocess. ...`", _fork.lazy_init)
value("torch.cuda._is_in_bad_fork", "True in a process forked (`os.fork`, multiprocessing's 'fork', DataLoader "
      "workers) after its parent initialised the simulated CUDA or called `is_available()`; 'spawn' children start "
      "clean", _fork.is_in_bad_fork)
# (torch.cuda._is_compiled and torch.backends.cuda.is_built stay False: PyTorch's internals
# import CUDA-only C functions when they are True, e.g. torch._dynamo.device_interface and
# torch._inductor.cudagraph_trees.)


@emulates("torch.cuda.current_device", "the current simulated GPU's index (per thread, like CUDA)")
def current_device() -> int:
    _fork.lazy_init()
    return _backend.current_index()


@emulates("torch.cuda.set_device", "makes GPU i current; an index past the last GPU raises CUDA's `invalid device ordinal`")
def set_device(device: Any) -> None:
    index = device_index(device)
    if index >= 0:
        _fork.lazy_init()
    _backend._set_index(index)


@emulates("torch.cuda.device", "context manager: GPU i is current inside the block")
class device:
    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else device_index(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = _backend.current_index()
        if self.idx >= 0:
            _fork.lazy_init()
            _backend._set_index(self.idx)

    def __exit__(self, *exc: object) -> bool:
        _backend._set_index(self.prev_idx)
        return False


@emulates("torch.cuda.device_of", "context manager: the tensor's GPU is current inside the block")
class device_of(device):
    def __init__(self, obj: Any) -> None:
        with torch._C.DisableTorchFunction():
            idx = obj.get_device() if obj.device.type == BACKEND else -1
        super().__init__(idx if idx >= 0 else None)


@emulates("torch.cuda.get_device_name", "the simulated GPU's name (see its properties above)")
def get_device_name(device: Any = None) -> str:
    _fork.lazy_init()
    device_index(device)
    return GPU.name


@emulates("torch.cuda.get_device_capability", "(8, 0)")
def get_device_capability(device: Any = None) -> tuple[int, int]:
    _fork.lazy_init()
    device_index(device)
    return (GPU.major, GPU.minor)


@emulates("torch.cuda.get_device_properties", "the simulated GPU's properties (table above)")
def get_device_properties(device: Any = None) -> SimulatedGPU:
    _fork.lazy_init()
    device_index(device)
    return GPU


value("torch.cuda.is_bf16_supported", "True", lambda including_emulation=True: True)
value("torch.cuda.is_tf32_supported", "True", lambda: True)
value("torch.cuda.get_arch_list", "['sm_80']", lambda: ["sm_80"])
value("torch.cuda.get_gencode_flags", "'-gencode compute=compute_80,code=sm_80'",
      lambda: "-gencode compute=compute_80,code=sm_80")
value("torch.cuda.can_device_access_peer", "True for two valid indices",
      lambda device, peer_device: _fork.lazy_init() or (device_index(device) >= 0 and device_index(peer_device) >= 0))
value("torch.cuda.get_sync_debug_mode", "0", lambda: 0)
value("torch.cuda.set_sync_debug_mode", "accepted; nothing runs asynchronously to report", lambda debug_mode: None)
value("torch.cuda.ipc_collect", "no-op", lambda: None)
value("torch.version.cuda", f"`'{CUDA_VERSION}'` (a stand-in: programs parse it)", CUDA_VERSION)
value("torch.backends.cudnn.is_available", "True (the `benchmark`, `deterministic`, `enabled`, `allow_tf32` flags and "
      "`torch.backends.cuda.matmul.allow_tf32` are PyTorch's own and simply work)", lambda: True)
value("torch.backends.cudnn.version", f"{CUDNN_VERSION} (a stand-in)", lambda: CUDNN_VERSION)


_set_default_device = torch.set_default_device
_get_default_device = torch.get_default_device


@emulates("torch.set_default_device", '`"cuda"` / `"cuda:N"`: factories make tensors on the simulated GPU')
def set_default_device(device: Any) -> None:
    target = torch.device(device) if isinstance(device, str) else device
    if isinstance(target, torch.device) and target.type == "cuda":
        # (PyTorch keeps the default-device mode below every other mode: the alias never sees
        # the device it injects, so the simulated device is named here)
        device = home(device_index(target)) if target.index is not None else (
            torch.device(BACKEND) if STATE.target == BACKEND else torch.device("cpu"))
    _set_default_device(device)


@emulates("torch.get_default_device", "`cuda:N` while the simulated GPU is the default")
def get_default_device() -> torch.device:
    d = _get_default_device()
    return torch.device("cuda", d.index or 0) if d.type == BACKEND else d


@emulates("torch.cuda.synchronize", "returns at once: every simulated kernel has finished when its call returns")
def synchronize(device: Any = None) -> None:
    _fork.lazy_init()
    device_index(device)


# -- memory -----------------------------------------------------------------------------------------


def _mem(name: str, behaviour: str, read: Callable[[int], Any]) -> None:
    def fn(device: Any = None, abbreviated: bool = False) -> Any:  # (memory_summary's second argument)
        return read(device_index(device))

    fn.__name__ = name
    value(f"torch.cuda.{name}", behaviour, fn)


_mem("memory_allocated", "bytes held by live tensors on the GPU, each rounded up to 512 as CUDA's allocator does",
     lambda i: TRACKER.read("allocated", i))
_mem("max_memory_allocated", "peak of `memory_allocated` since start or `reset_peak_memory_stats`",
     lambda i: TRACKER.read("peak", i))
_mem("memory_reserved", "the simulated caching allocator's pool: the peak, in 2 MiB segments, until `empty_cache`",
     lambda i: TRACKER.read("reserved", i))
_mem("max_memory_reserved", "peak of `memory_reserved`", lambda i: TRACKER.read("peak_reserved", i))
_mem("memory_cached", "as `memory_reserved` (old name)", lambda i: TRACKER.read("reserved", i))
_mem("max_memory_cached", "as `max_memory_reserved` (old name)", lambda i: TRACKER.read("peak_reserved", i))
_mem("reset_peak_memory_stats", "peaks start again from the current values", TRACKER.reset_peak)
_mem("reset_max_memory_allocated", "as `reset_peak_memory_stats`", TRACKER.reset_peak)
_mem("reset_max_memory_cached", "as `reset_peak_memory_stats`", TRACKER.reset_peak)
_mem("reset_accumulated_memory_stats", "no-op", lambda i: None)
_mem("memory_stats", "`allocated_bytes.all.current/peak`, `reserved_bytes.all.*`, `active_bytes.all.*`, "
     "`num_ooms` (0), …", TRACKER.stats)
_mem("mem_get_info", "(total − reserved, total) with the simulated GPU's 16 GiB",
     lambda i: _fork.lazy_init() or (GPU.total_memory - TRACKER.read("reserved", i), GPU.total_memory))
_mem("memory_summary", "a short text of the statistics above",
     lambda i: "\n".join(f"{k}: {v}" for k, v in TRACKER.stats(i).items()))
value("torch.cuda.empty_cache", "returns the unused pool: `memory_reserved` drops to the live bytes", lambda: TRACKER.empty_cache())
value("torch.cuda.set_per_process_memory_fraction", "accepted (no limit enforced)", lambda fraction, device=None: None)
# Lightning's CUDAAccelerator.teardown (2.0) calls this private binding, which only CUDA builds have
value("torch._C._cuda_clearCublasWorkspaces", "no-op: the simulated GPUs keep no cuBLAS workspaces", lambda: None)
value("torch.cuda.list_gpu_processes", "one line: no processes are listed", lambda device=None: f"GPU:{device_index(device)}\nno processes are running")

# -- random numbers ----------------------------------------------------------------------------------
# The simulated GPUs draw from the CPU generator, so a simulated run and the plain-CPU reference
# run of the same program draw the same numbers.

value("torch.cuda.manual_seed", "seeds the CPU generator the simulated GPUs draw from", lambda seed: torch.default_generator.manual_seed(int(seed)) and None)
value("torch.cuda.manual_seed_all", "as `manual_seed`", lambda seed: torch.default_generator.manual_seed(int(seed)) and None)
value("torch.cuda.seed", "as `torch.seed()`", lambda: torch.default_generator.seed() and None)
value("torch.cuda.seed_all", "as `torch.seed()`", lambda: torch.default_generator.seed() and None)
value("torch.cuda.initial_seed", "the CPU generator's initial seed", lambda: torch.default_generator.initial_seed())
def _get_rng_state(device: Any = "cuda") -> torch.Tensor:
    _fork.lazy_init()
    return torch.get_rng_state()


value("torch.cuda.get_rng_state", "the CPU generator's state (a ByteTensor)", _get_rng_state)
value("torch.cuda.set_rng_state", "sets the CPU generator's state", lambda new_state, device="cuda": torch.set_rng_state(new_state))
value("torch.cuda.get_rng_state_all", "one state per GPU", lambda: [_get_rng_state() for _ in range(_backend.DEVICE_COUNT)])
value("torch.cuda.set_rng_state_all", "sets the CPU generator's state from the first", lambda new_states: torch.set_rng_state(next(iter(new_states))))

# -- legacy tensor types -----------------------------------------------------------------------------

_LEGACY = {
    "FloatTensor": torch.float32, "DoubleTensor": torch.float64, "HalfTensor": torch.float16,
    "BFloat16Tensor": torch.bfloat16, "LongTensor": torch.int64, "IntTensor": torch.int32,
    "ShortTensor": torch.int16, "CharTensor": torch.int8, "ByteTensor": torch.uint8, "BoolTensor": torch.bool,
}


class _LegacyMeta(type):
    dtype: torch.dtype

    def __call__(cls, *args: Any, device: Any = None) -> torch.Tensor:
        target = home(device_index(device))
        with torch._C.DisableTorchFunction():
            if not args:
                return torch.empty(0, dtype=cls.dtype, device=target)
            if all(isinstance(a, int) for a in args):
                return torch.empty(args, dtype=cls.dtype, device=target)
            if len(args) == 1 and isinstance(args[0], torch.Size):
                return torch.empty(args[0], dtype=cls.dtype, device=target)
            return torch.tensor(args[0], dtype=cls.dtype, device=target)

    def __instancecheck__(cls, obj: object) -> bool:
        if not isinstance(obj, torch.Tensor):
            return False
        with torch._C.DisableTorchFunction():
            return obj.device.type == STATE.target and obj.dtype == cls.dtype


for _name, _dtype in _LEGACY.items():
    REGISTRY[f"torch.cuda.{_name}"] = Entry(
        f"torch.cuda.{_name}",
        f"`torch.cuda.{_name}(sizes…)` / `(data)`: a {str(_dtype).removeprefix('torch.')} tensor on the current GPU; "
        "`isinstance` works",
        _LegacyMeta(_name, (), {"dtype": _dtype, "__module__": "torch.cuda"}),
    )

# -- profiling markers ---------------------------------------------------------------------------------

value("torch.cuda.nvtx.range_push", "no-op (returns 0)", lambda msg: 0)
value("torch.cuda.nvtx.range_pop", "no-op (returns 0)", lambda: 0)
value("torch.cuda.nvtx.mark", "no-op", lambda msg: None)


@emulates("torch.cuda.nvtx.range", "context manager, no-op")
class _nvtx_range:
    def __init__(self, msg: str, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

    def __call__(self, fn: Any) -> Any:
        return fn


# -- refused ---------------------------------------------------------------------------------------

_GRAPHS = "CUDA graphs capture and replay GPU kernels; the simulated GPU has none to capture"
for _t in ("torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed_callables",
           "torch.cuda.graphs.CUDAGraph", "torch.cuda.graphs.graph", "torch.cuda.graphs.make_graphed_callables",
           "torch.cuda.graph_pool_handle"):
    refuse(_t, _GRAPHS)
# Nothing is ever being captured. torch.compile asks before it traces (a CUDA wheel's Dynamo
# calls the C function behind it, which needs the driver); so do optimizers and AMP.
for _t in ("torch.cuda.is_current_stream_capturing", "torch.cuda.graphs.is_current_stream_capturing"):
    value(_t, "False: no CUDA graph is ever being captured on the simulated GPUs", lambda: False)
_NCCL = "NCCL's API needs real GPUs; use torch.distributed (backend 'nccl' runs on the simulated GPUs)"
for _t in ("all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter", "version", "unique_id", "init_rank"):
    refuse(f"torch.cuda.nccl.{_t}", _NCCL)
_ALLOC = "the simulated GPUs have no CUDA caching allocator to replace or inspect"
for _t in ("MemPool", "use_mem_pool", "CUDAPluggableAllocator", "change_current_allocator", "memory_snapshot",
           "memory._record_memory_history", "memory._snapshot", "memory._dump_snapshot",
           "caching_allocator_alloc", "caching_allocator_delete"):
    refuse(f"torch.cuda.{_t}", _ALLOC)
_NVML = "it reads the GPU's sensors through NVML; a simulated GPU has none"
for _t in ("utilization", "temperature", "power_draw", "clock_rate", "memory_usage", "device_memory_used"):
    refuse(f"torch.cuda.{_t}", _NVML)
refuse("torch.cuda.jiterator._create_jit_fn", "it compiles a CUDA kernel at run time")
refuse("torch.cuda.jiterator._create_multi_output_jit_fn", "it compiles a CUDA kernel at run time")
refuse("torch.cuda.ExternalStream", "a stream made outside PyTorch belongs to a real GPU")
refuse("torch.cuda.get_stream_from_external", "a stream made outside PyTorch belongs to a real GPU")
refuse("torch.cuda.current_blas_handle", "cuBLAS handles belong to a real GPU")
refuse("torch.cuda.cudart", "it is the CUDA runtime library itself")
