"""CUDA streams and events on the simulated GPUs, with CUDA's observable semantics."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import torch

from . import _backend
from ._registry import REGISTRY, Entry, Unsupported, device_index, emulates, home

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
