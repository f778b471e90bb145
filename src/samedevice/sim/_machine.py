"""CUDA machine mode: while the "cuda" alias is on, the process looks like a machine with N GPUs.

Unmodified GPU programs ask ``torch.cuda`` about the machine before they touch a tensor
(``"cuda" if torch.cuda.is_available() else "cpu"``, ``device_count() > 1``,
``get_device_name()``, streams, events, memory statistics). On a CPU-only build those calls say
"no CUDA" or raise "Torch not compiled with CUDA enabled", and the program silently runs on the
CPU. Here each such call is answered for the simulated GPUs instead.

:data:`REGISTRY` is the one list of what is emulated and what is refused; the docs table on
"Run your GPU code on a CPU" is generated from it (:func:`table`). :func:`install` swaps the
entries into their modules when the alias goes on and :func:`uninstall` puts the originals
back, so nothing here sits on the per-operator path. Calls that cannot be simulated (CUDA
graphs, custom CUDA kernels, Triton, NCCL's own API) raise :class:`Unsupported` naming the call.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import itertools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from . import _backend
from ._memory import TRACKER
from ._naming import BACKEND, INVALID_ORDINAL


class Unsupported(RuntimeError):
    """A CUDA feature the simulated machine cannot provide (raised, never silently skipped)."""


class UnsupportedImport(Unsupported, ImportError):
    """``import triton`` under the alias: loud for the user, "not installed" for library probes."""


# -- the simulated GPU ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SimulatedGPU:
    """What ``torch.cuda.get_device_properties(i)`` reports for every simulated GPU.

    The numbers describe no real product: capability 8.0 makes the program take the paths it
    takes on a current data-centre GPU (bf16 and TF32 supported), and the memory size bounds
    ``mem_get_info``. Tensors really live in host memory.
    """

    name: str = "samedevice simulated GPU"
    major: int = 8
    minor: int = 0
    total_memory: int = 16 * 2**30
    multi_processor_count: int = 108
    warp_size: int = 32
    max_threads_per_multi_processor: int = 2048
    max_threads_per_block: int = 1024
    L2_cache_size: int = 40 * 2**20
    is_integrated: int = 0
    is_multi_gpu_board: int = 0
    regs_per_multiprocessor: int = 65536
    shared_memory_per_block: int = 48 * 2**10
    shared_memory_per_multiprocessor: int = 164 * 2**10
    gcnArchName: str = "NVIDIA CUDA does not support this field"  # as CUDA builds report it
    uuid: str = "00000000-0000-0000-0000-000000000000"
    pci_bus_id: int = 0
    pci_device_id: int = 0
    pci_domain_id: int = 0

    def __repr__(self) -> str:  # CUDA's _CudaDeviceProperties.__repr__ layout
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // 2**20}MB, multi_processor_count={self.multi_processor_count}, "
            f"uuid={self.uuid}, pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
            f"pci_domain_id={self.pci_domain_id}, L2_cache_size={self.L2_cache_size // 2**20}MB)"
        )


GPU = SimulatedGPU()
CUDA_VERSION = "12.8"  # torch.version.cuda under the alias: a parseable, documented stand-in
CUDNN_VERSION = 90100  # torch.backends.cudnn.version() under the alias (likewise)

_target = BACKEND  # where "GPU" tensors live: the sim device, or the CPU in the reference run


def home(index: int) -> torch.device:
    """The device a tensor on simulated GPU ``index`` really has."""
    return torch.device(BACKEND, index) if _target == BACKEND else torch.device("cpu")


def check_index(index: int) -> int:
    if not 0 <= index < _backend.DEVICE_COUNT:
        raise torch.AcceleratorError(INVALID_ORDINAL)
    return index


def device_index(device: Any = None, optional: bool = True) -> int:
    """``torch.cuda``'s device argument (None, int, "cuda:1", torch.device) as an index."""
    if device is None:
        return _backend.current_index()
    if isinstance(device, int) and not isinstance(device, bool):
        return check_index(device)
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type not in ("cuda", BACKEND) and not (device.type == _target and _target == "cpu"):
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return check_index(device.index) if device.index is not None else _backend.current_index()
    raise ValueError(f"Expected a cuda device, but got: {device!r}")


# -- the registry ---------------------------------------------------------------------------------


@dataclass
class Entry:
    target: str  # "torch.cuda.synchronize": module path + attribute
    behaviour: str  # one line for the docs table
    value: Any
    refused: bool = False

    @property
    def module(self) -> str:
        return self.target.rpartition(".")[0]

    @property
    def attr(self) -> str:
        return self.target.rpartition(".")[2]


REGISTRY: dict[str, Entry] = {}


def emulates(target: str, behaviour: str) -> Callable[[Any], Any]:
    def register(value: Any) -> Any:
        REGISTRY[target] = Entry(target, behaviour, value)
        return value

    return register


def value(target: str, behaviour: str, v: Any) -> None:
    REGISTRY[target] = Entry(target, behaviour, v)


def refuse(target: str, why: str) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        raise Unsupported(f"{target} is not simulated: {why}")

    refused.__name__ = target.rpartition(".")[2]
    REGISTRY[target] = Entry(target, why, refused, refused=True)


# -- devices ----------------------------------------------------------------------------------------


@emulates("torch.cuda.is_available", "True")
def is_available() -> bool:
    return True


@emulates("torch.cuda.device_count", "N, the number of simulated GPUs (`--gpus N`, default 1); equals `torch.accelerator.device_count()`")
def device_count() -> int:
    return _backend.DEVICE_COUNT


value("torch.cuda.is_initialized", "True", lambda: True)
value("torch.cuda.init", "no-op", lambda: None)
value("torch.cuda._lazy_init", "no-op (PyTorch's own lazy initialisation)", lambda: None)
# (torch.cuda._is_compiled and torch.backends.cuda.is_built stay False: PyTorch's internals
# import CUDA-only C functions when they are True, e.g. torch._dynamo.device_interface and
# torch._inductor.cudagraph_trees.)


@emulates("torch.cuda.current_device", "the current simulated GPU's index (per thread, like CUDA)")
def current_device() -> int:
    return _backend.current_index()


@emulates("torch.cuda.set_device", "makes GPU i current; an index past the last GPU raises CUDA's `invalid device ordinal`")
def set_device(device: Any) -> None:
    _backend._set_index(device_index(device))


@emulates("torch.cuda.device", "context manager: GPU i is current inside the block")
class device:
    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else device_index(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = _backend.current_index()
        if self.idx >= 0:
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
    device_index(device)
    return GPU.name


@emulates("torch.cuda.get_device_capability", "(8, 0)")
def get_device_capability(device: Any = None) -> tuple[int, int]:
    device_index(device)
    return (GPU.major, GPU.minor)


@emulates("torch.cuda.get_device_properties", "the simulated GPU's properties (table above)")
def get_device_properties(device: Any = None) -> SimulatedGPU:
    device_index(device)
    return GPU


value("torch.cuda.is_bf16_supported", "True", lambda including_emulation=True: True)
value("torch.cuda.is_tf32_supported", "True", lambda: True)
value("torch.cuda.get_arch_list", "['sm_80']", lambda: ["sm_80"])
value("torch.cuda.get_gencode_flags", "'-gencode compute=compute_80,code=sm_80'",
      lambda: "-gencode compute=compute_80,code=sm_80")
value("torch.cuda.can_device_access_peer", "True for two valid indices",
      lambda device, peer_device: device_index(device) >= 0 and device_index(peer_device) >= 0)
value("torch.cuda.get_sync_debug_mode", "0", lambda: 0)
value("torch.cuda.set_sync_debug_mode", "accepted; nothing runs asynchronously to report", lambda debug_mode: None)
value("torch.cuda.ipc_collect", "no-op", lambda: None)
value("torch.version.cuda", f"`'{CUDA_VERSION}'` (a stand-in: programs parse it)", CUDA_VERSION)
value("torch.backends.cudnn.is_available", "True (the `benchmark`, `deterministic`, `enabled`, `allow_tf32` flags and "
      "`torch.backends.cuda.matmul.allow_tf32` are PyTorch's own and simply work)", lambda: True)
value("torch.backends.cudnn.version", f"{CUDNN_VERSION} (a stand-in)", lambda: CUDNN_VERSION)


@emulates("torch.cuda.synchronize", "returns at once: every simulated kernel has finished when its call returns")
def synchronize(device: Any = None) -> None:
    device_index(device)


# -- streams and events ---------------------------------------------------------------------------

_CStream = torch._C.Stream
_CEvent = torch._C.Event
_stream_ids = itertools.count(1)
_event_ids = itertools.count(1)
_streams = threading.local()  # per thread: {device index: current Stream}


class Stream(_CStream):
    """A CUDA stream on a simulated GPU.

    Kernels run synchronously, so CUDA's observable semantics hold trivially: ``query()`` is
    True, ``synchronize()``/``wait_stream()``/``wait_event()`` return at once, and work
    "enqueued" on a stream is done before the next Python line runs. It is a ``torch.Stream``
    of the sim device underneath, so ``tensor.record_stream(s)`` accepts it.
    """

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Stream:
        index = device_index(device)
        self = _CStream.__new__(cls, device=home(index), priority=priority)
        self._index = index
        self._priority = priority
        self._handle = 0 if kwargs.get("_default") else next(_stream_ids)
        return self

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        pass

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("cuda", self._index)

    @property
    def device_index(self) -> int:  # type: ignore[override]
        return self._index

    @property
    def device_type(self) -> int:  # type: ignore[override]
        return 1  # c10::DeviceType::CUDA

    @property
    def cuda_stream(self) -> int:
        return self._handle

    @property
    def stream_id(self) -> int:  # type: ignore[override]
        return self._handle

    @property
    def priority(self) -> int:  # type: ignore[override]
        return self._priority

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        event.wait(self)

    def wait_stream(self, stream: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Any:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and (self._index, self._handle) == (other._index, other._handle)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self._index, self._handle))

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device=cuda:{self._index} cuda_stream={self._handle:#x}>"

    @staticmethod
    def priority_range() -> tuple[int, int]:
        return (0, -5)


REGISTRY["torch.cuda.Stream"] = Entry(
    "torch.cuda.Stream",
    "a stream on a simulated GPU: `query()` True, `synchronize`/`wait_stream`/`wait_event` return at once "
    "(kernels run synchronously); `record_stream` accepts it",
    Stream,
)
REGISTRY["torch.cuda.streams.Stream"] = Entry("torch.cuda.streams.Stream", "as `torch.cuda.Stream`", Stream)

_default_streams: dict[int, Stream] = {}


def _default(index: int) -> Stream:
    s = _default_streams.get(index)
    if s is None:
        s = _default_streams[index] = Stream(index, _default=True)
    return s


@emulates("torch.cuda.current_stream", "the thread's current stream on the GPU (the default stream unless set)")
def current_stream(device: Any = None) -> Stream:
    index = device_index(device)
    current = getattr(_streams, "current", None)
    return (current or {}).get(index) or _default(index)


@emulates("torch.cuda.default_stream", "the GPU's default stream (`cuda_stream == 0`)")
def default_stream(device: Any = None) -> Stream:
    return _default(device_index(device))


@emulates("torch.cuda.set_stream", "makes the stream current for its GPU in this thread")
def set_stream(stream: Any) -> None:
    if stream is None:
        return
    if not hasattr(_streams, "current"):
        _streams.current = {}
    _streams.current[stream.device_index] = stream


@emulates("torch.cuda.stream", "context manager: the stream (and its GPU) are current inside the block")
class StreamContext:
    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __enter__(self) -> Any:
        if self.stream is None:
            return None
        self.prev_stream = current_stream(self.stream.device_index)
        self.prev_device = _backend.current_index()
        _backend._set_index(self.stream.device_index)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is None:
            return
        set_stream(self.prev_stream)
        _backend._set_index(self.prev_device)


REGISTRY["torch.cuda.StreamContext"] = Entry("torch.cuda.StreamContext", "as `torch.cuda.stream`", StreamContext)


class Event:
    """A CUDA event on a simulated GPU: ``record()`` takes a real timestamp.

    ``elapsed_time`` is the wall time between two records, with CUDA's checks (timing enabled,
    both recorded) and messages; ``query()`` is True and ``synchronize()``/``wait()`` return at
    once because the kernels before the record have already run.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, external: bool = False) -> None:
        if interprocess:
            raise Unsupported("torch.cuda.Event(interprocess=True) is not simulated: there is no second "
                              "process sharing a GPU")
        self.enable_timing = enable_timing
        self._index: int | None = None
        self._time: float | None = None
        self._handle = next(_event_ids)

    def record(self, stream: Any = None) -> None:
        stream = stream if stream is not None else current_stream()
        if self._index is not None and self._index != stream.device_index:
            raise RuntimeError(f"Event device {self._index} does not match recording stream's device "
                               f"{stream.device_index}.")
        self._index = stream.device_index
        self._time = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end_event: Event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0

    def ipc_handle(self) -> Any:
        raise Unsupported("torch.cuda.Event.ipc_handle is not simulated: there is no second process sharing a GPU")

    @property
    def cuda_event(self) -> int:
        return self._handle

    @property
    def device(self) -> torch.device | None:
        return None if self._index is None else torch.device("cuda", self._index)

    def __repr__(self) -> str:
        return f"<torch.cuda.Event {self._handle:#x}>" if self._time is not None else "<torch.cuda.Event uninitialized>"


REGISTRY["torch.cuda.Event"] = Entry(
    "torch.cuda.Event",
    "`record()` takes a real timestamp; `elapsed_time` is the wall time between records, with CUDA's checks "
    "and messages; `query()` True; `synchronize`/`wait` return at once",
    Event,
)
REGISTRY["torch.cuda.streams.Event"] = Entry("torch.cuda.streams.Event", "as `torch.cuda.Event`", Event)


class _GenericMeta(type):
    """``torch.Stream``/``torch.Event`` replacements: ``"cuda"`` gives a simulated one, anything
    else PyTorch's; ``isinstance`` still accepts the objects PyTorch makes itself."""

    _base: type
    _cuda: Callable[..., Any]

    def __call__(cls, device: Any = None, *args: Any, **kwargs: Any) -> Any:
        target = torch.device(device) if isinstance(device, str) else device
        if isinstance(target, torch.device) and target.type == "cuda":
            return cls._cuda(target, *args, **kwargs)
        return cls._base(device, *args, **kwargs) if device is not None else cls._base(*args, **kwargs)

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, (cls._base, Stream, Event))

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, (cls._base, Stream, Event))


class GenericStream(metaclass=_GenericMeta):
    _base = _CStream

    @staticmethod
    def _cuda(target: torch.device, priority: int = 0, **kwargs: Any) -> Stream:
        return Stream(target, priority=priority)


class GenericEvent(metaclass=_GenericMeta):
    _base = _CEvent

    @staticmethod
    def _cuda(target: torch.device, *, enable_timing: bool = False, blocking: bool = False,
              interprocess: bool = False) -> Event:
        ev = Event(enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)
        ev._index = device_index(target)
        return ev


REGISTRY["torch.Stream"] = Entry("torch.Stream", '`torch.Stream("cuda")` is a `torch.cuda.Stream` on a simulated GPU', GenericStream)
REGISTRY["torch.Event"] = Entry("torch.Event", '`torch.Event("cuda", enable_timing=True)` is a `torch.cuda.Event`', GenericEvent)

# -- memory -----------------------------------------------------------------------------------------


def _mem(name: str, behaviour: str, read: Callable[[int], Any]) -> None:
    def fn(device: Any = None, abbreviated: bool = False) -> Any:  # (memory_summary's second argument)
        return read(device_index(device))

    fn.__name__ = name
    value(f"torch.cuda.{name}", behaviour, fn)


_mem("memory_allocated", "bytes held by live tensors on the GPU, each rounded up to 512 as CUDA's allocator does",
     lambda i: TRACKER.allocated.get(i, 0))
_mem("max_memory_allocated", "peak of `memory_allocated` since start or `reset_peak_memory_stats`",
     lambda i: TRACKER.peak.get(i, 0))
_mem("memory_reserved", "the simulated caching allocator's pool: the peak, in 2 MiB segments, until `empty_cache`",
     lambda i: TRACKER.reserved.get(i, 0))
_mem("max_memory_reserved", "peak of `memory_reserved`", lambda i: TRACKER.peak_reserved.get(i, 0))
_mem("memory_cached", "as `memory_reserved` (old name)", lambda i: TRACKER.reserved.get(i, 0))
_mem("max_memory_cached", "as `max_memory_reserved` (old name)", lambda i: TRACKER.peak_reserved.get(i, 0))
_mem("reset_peak_memory_stats", "peaks start again from the current values", TRACKER.reset_peak)
_mem("reset_max_memory_allocated", "as `reset_peak_memory_stats`", TRACKER.reset_peak)
_mem("reset_max_memory_cached", "as `reset_peak_memory_stats`", TRACKER.reset_peak)
_mem("reset_accumulated_memory_stats", "no-op", lambda i: None)
_mem("memory_stats", "`allocated_bytes.all.current/peak`, `reserved_bytes.all.*`, `active_bytes.all.*`, "
     "`num_ooms` (0), …", TRACKER.stats)
_mem("mem_get_info", "(total − reserved, total) with the simulated GPU's 16 GiB",
     lambda i: (GPU.total_memory - TRACKER.reserved.get(i, 0), GPU.total_memory))
_mem("memory_summary", "a short text of the statistics above",
     lambda i: "\n".join(f"{k}: {v}" for k, v in TRACKER.stats(i).items()))
value("torch.cuda.empty_cache", "returns the unused pool: `memory_reserved` drops to the live bytes", lambda: TRACKER.empty_cache())
value("torch.cuda.set_per_process_memory_fraction", "accepted (no limit enforced)", lambda fraction, device=None: None)
value("torch.cuda.list_gpu_processes", "one line: no processes are listed", lambda device=None: f"GPU:{device_index(device)}\nno processes are running")

# -- random numbers ----------------------------------------------------------------------------------
# The simulated GPUs draw from the CPU generator, so a simulated run and the plain-CPU reference
# run of the same program draw the same numbers.

value("torch.cuda.manual_seed", "seeds the CPU generator the simulated GPUs draw from", lambda seed: torch.default_generator.manual_seed(int(seed)) and None)
value("torch.cuda.manual_seed_all", "as `manual_seed`", lambda seed: torch.default_generator.manual_seed(int(seed)) and None)
value("torch.cuda.seed", "as `torch.seed()`", lambda: torch.default_generator.seed() and None)
value("torch.cuda.seed_all", "as `torch.seed()`", lambda: torch.default_generator.seed() and None)
value("torch.cuda.initial_seed", "the CPU generator's initial seed", lambda: torch.default_generator.initial_seed())
value("torch.cuda.get_rng_state", "the CPU generator's state (a ByteTensor)", lambda device="cuda": torch.get_rng_state())
value("torch.cuda.set_rng_state", "sets the CPU generator's state", lambda new_state, device="cuda": torch.set_rng_state(new_state))
value("torch.cuda.get_rng_state_all", "one state per GPU", lambda: [torch.get_rng_state() for _ in range(_backend.DEVICE_COUNT)])
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
            return obj.device.type == _target and obj.dtype == cls.dtype


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
_EXT = "custom CUDA kernels are compiled for a real GPU; the simulator runs PyTorch's own operators only"
refuse("torch.utils.cpp_extension.CUDAExtension", _EXT)


def _cuda_sources(sources: Any) -> bool:
    items = [sources] if isinstance(sources, str) else list(sources or ())
    return any(str(s).endswith((".cu", ".cuh")) for s in items)


def _guard_extension_loader(module: Any) -> None:
    """``load``/``load_inline`` of CUDA code is refused; C++-only extensions still build."""
    for name, is_cuda in (
        ("load", lambda a, k: k.get("with_cuda") or _cuda_sources(k.get("sources", a[1] if len(a) > 1 else ()))),
        ("load_inline", lambda a, k: k.get("with_cuda") or bool(k.get("cuda_sources", a[2] if len(a) > 2 else None))),
    ):
        original = getattr(module, name)
        if getattr(original, "_samedevice", False):
            continue

        def wrapper(*args: Any, __original: Any = original, __name: str = name, __is_cuda: Any = is_cuda,
                    **kwargs: Any) -> Any:
            if _ON and __is_cuda(args, kwargs):
                raise Unsupported(f"torch.utils.cpp_extension.{__name} is not simulated for CUDA sources: {_EXT}")
            return __original(*args, **kwargs)

        wrapper._samedevice = True  # type: ignore[attr-defined]
        setattr(module, name, wrapper)


REGISTRY["torch.utils.cpp_extension.load"] = Entry(
    "torch.utils.cpp_extension.load", f"refused for `.cu` sources or `with_cuda=True`: {_EXT}", None, refused=True)
REGISTRY["torch.utils.cpp_extension.load_inline"] = Entry(
    "torch.utils.cpp_extension.load_inline", f"refused with `cuda_sources`: {_EXT}", None, refused=True)
REGISTRY["triton"] = Entry(
    "triton", "`import triton` raises `Unsupported` (an `ImportError`, so libraries that probe for Triton "
    "fall back as on a machine without it): Triton compiles kernels for a real GPU", None, refused=True)


# -- safetensors ------------------------------------------------------------------------------------


def _patch_safetensors(module: Any) -> None:
    """``safe_open(..., device="cuda")`` asks PyTorch for pinned host memory through the
    accelerator's C++ hooks, which a Python backend cannot provide: open on the CPU and move
    each tensor to the simulated GPU as it is read."""
    original = module.safe_open
    if getattr(original, "_samedevice", False):
        return

    class safe_open:
        _samedevice = True

        def __init__(self, filename: Any, framework: str, device: Any = "cpu", **kwargs: Any) -> None:
            target = device
            if _ON and framework in ("pt", "torch"):
                spec = f"cuda:{device}" if isinstance(device, int) and not isinstance(device, bool) else device
                if isinstance(spec, str | torch.device) and torch.device(spec).type == "cuda":
                    target, device = home(device_index(spec)), "cpu"
                else:
                    target = None
            else:
                target = None
            self._inner = original(filename, framework=framework, device=device, **kwargs)
            self._target = target

        def __enter__(self) -> safe_open:
            self._inner.__enter__()
            return self

        def __exit__(self, *exc: object) -> Any:
            return self._inner.__exit__(*exc)

        def get_tensor(self, name: str) -> Any:
            t = self._inner.get_tensor(name)
            return t.to(self._target) if self._target is not None else t

        def get_tensors(self) -> dict[str, Any]:
            tensors = self._inner.get_tensors()
            if self._target is None:
                return tensors
            return {k: t.to(self._target) for k, t in tensors.items()}

        def get_slice(self, name: str) -> Any:
            return _Slice(self._inner.get_slice(name), self._target)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

    module.safe_open = safe_open
    torch_module = sys.modules.get("safetensors.torch")
    if torch_module is not None:
        torch_module.safe_open = safe_open


class _Slice:
    def __init__(self, inner: Any, target: Any) -> None:
        self._inner, self._target = inner, target

    def __getitem__(self, key: Any) -> Any:
        t = self._inner[key]
        return t.to(self._target) if self._target is not None else t

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


REGISTRY["safetensors.safe_open"] = Entry(
    "safetensors.safe_open",
    '`device="cuda"` (and `safetensors.torch.load_file(..., device="cuda")`): read on the CPU, tensors land on '
    "the simulated GPU", None)

# -- installing -----------------------------------------------------------------------------------

_ON = False
_saved: dict[str, Any] = {}
_MISSING = object()
# Modules patched when they are imported (they may come after enable(), or never).
_ON_IMPORT: dict[str, Callable[[Any], None]] = {
    "torch.utils.cpp_extension": _guard_extension_loader,
    "safetensors": _patch_safetensors,
    "safetensors.torch": lambda m: _patch_safetensors(sys.modules["safetensors"]),
}


def _resolve(path: str) -> Any | None:
    """The module named by ``path`` if it is importable without side effects, else None."""
    obj: Any = None
    parts = path.split(".")
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        if name in sys.modules:
            obj = sys.modules[name]
            continue
        if obj is not None and hasattr(obj, parts[i]):
            obj = getattr(obj, parts[i])
            continue
        return None
    return obj


class _ImportHook(importlib.abc.MetaPathFinder):
    """Patch late-imported modules; refuse ``import triton`` while the machine mode is on."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if not _ON:
            return None
        if fullname == "triton" or fullname.startswith("triton."):
            raise UnsupportedImport(f"{fullname} is not simulated: Triton compiles kernels for a real GPU")
        patch = _ON_IMPORT.get(fullname)
        if patch is None:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def run(module: Any) -> None:
            exec_module(module)
            patch(module)
            _apply_entries(fullname)

        spec.loader.exec_module = run  # type: ignore[method-assign]
        return spec


_hook = _ImportHook()


def _apply_entries(only: str | None = None) -> None:
    for entry in REGISTRY.values():
        if entry.value is None or (only is not None and entry.module != only):
            continue
        module = _resolve(entry.module)
        if module is None or entry.target in _saved:
            continue
        _saved[entry.target] = getattr(module, entry.attr, _MISSING)
        setattr(module, entry.attr, entry.value)


def install(target: str = BACKEND) -> None:
    """Swap the registry into place (the alias just went on); idempotent.

    ``target="cpu"``: the plain-CPU reference run (``samedevice run --cpu``) answers the same
    calls, so a program takes the same path in both runs; its "GPU" tensors are CPU tensors.
    """
    global _ON, _target
    if _ON:
        return
    _target = target
    import torch.cuda.graphs
    import torch.cuda.jiterator
    import torch.cuda.memory
    import torch.cuda.nccl
    import torch.cuda.nvtx  # noqa: F401

    _apply_entries()
    _ON = True
    TRACKER.on = True
    for name, patch in _ON_IMPORT.items():
        if name in sys.modules:
            patch(sys.modules[name])
    if _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)


def uninstall() -> None:
    """Put PyTorch's originals back (the alias went off)."""
    global _ON
    if not _ON:
        return
    for target, original in _saved.items():
        module = _resolve(target.rpartition(".")[0])
        if module is None:
            continue
        if original is _MISSING:
            delattr(module, target.rpartition(".")[2])
        else:
            setattr(module, target.rpartition(".")[2], original)
    _saved.clear()
    _ON = False


def is_on() -> bool:
    return _ON


def table() -> str:
    """The docs table of emulated and refused calls, generated from :data:`REGISTRY`."""
    rows = ["| call | under `samedevice run` |", "|---|---|"]
    for entry in sorted(REGISTRY.values(), key=lambda e: (e.refused, e.target)):
        behaviour = entry.behaviour.replace("|", "\\|")
        if entry.refused:
            behaviour = f"**refused** (`samedevice.sim.Unsupported`): {behaviour}"
        rows.append(f"| `{entry.target}` | {behaviour} |")
    return "\n".join(rows)


def properties_table() -> str:
    rows = ["| property | value |", "|---|---|"]
    for name in ("name", "major", "minor", "total_memory", "multi_processor_count", "warp_size", "L2_cache_size"):
        rows.append(f"| `{name}` | `{getattr(GPU, name)!r}` |")
    rows.append(f"| `torch.version.cuda` | `{CUDA_VERSION!r}` |")
    rows.append(f"| `torch.backends.cudnn.version()` | `{CUDNN_VERSION}` |")
    return "\n".join(rows)
