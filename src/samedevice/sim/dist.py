"""``torch.distributed`` for the simulated accelerator: the role NCCL plays for CUDA.

Gloo serves CPU tensors only (``ProcessGroupGloo::allreduce: unsupported device type sim``),
and a backend written in Python can only be a whole ``ProcessGroup``. So the group registered
here as backend ``"simgloo"`` (``init_process_group(backend="simgloo")``; under the CUDA
alias ``"nccl"`` maps to it) is a Python ``ProcessGroup`` that

* carries simulated tensors by copying them to the CPU, running Gloo's collective and copying
  the result back -- enough for ``all_reduce``, ``broadcast``, ``all_gather`` and DDP;
* hands any other tensor to a real c10d ``ProcessGroup`` whose only backend serves the
  ``sim`` device type, so a CPU tensor fails with c10d's own
  ``No backend type associated with device type cpu`` -- what an NCCL-only group prints.
"""

from __future__ import annotations

import atexit
import functools
import weakref
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup as C10dGroup
from torch._C._distributed_c10d import ProcessGroupGloo, _create_work_from_future

from ._naming import BACKEND
from ._plumbing import from_cpu, is_sim, to_cpu

NAME = "simgloo"
# The CPU reference run's "nccl": the same group over plain CPU tensors (see ``register``)
REFERENCE_NAME = "refgloo"


def _plain(method: Any) -> Any:
    """Run a collective with torch-function handling off.

    c10d calls these methods from C++ (DDP's reducer) or from ``dist.*`` in user code, where
    the CUDA alias mode would answer ``.device``/``.is_cuda`` with CUDA's names.
    """

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        with torch._C.DisableTorchFunction():
            return method(*args, **kwargs)

    return wrapper


def _done(result: Any) -> Any:
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


def _all_sim(tensors: list[torch.Tensor]) -> bool:
    return bool(tensors) and all(is_sim(t) for t in tensors)


def _all_cpu(tensors: list[torch.Tensor]) -> bool:
    return bool(tensors) and all(t.device.type == "cpu" for t in tensors)


# Groups not yet shut down, for the exit hook: a program that never calls
# destroy_process_group (or raises before it) must not leave Gloo to interpreter finalization.
_live_groups: weakref.WeakSet[SimProcessGroup] = weakref.WeakSet()


def _shutdown_live_groups() -> None:
    for group in list(_live_groups):
        group.shutdown()


class SimProcessGroup(dist.ProcessGroup):
    """The simulated GPUs' group (``device="sim"``), or the CPU reference run's (``"cpu"``): the
    same Python group over CPU tensors, so that both runs tear Gloo down the same way."""

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta,
                 device: str = BACKEND) -> None:
        super().__init__(rank, size)
        self._rank, self._size, self._device = rank, size, device
        self._ours = _all_sim if device == BACKEND else _all_cpu
        self._gloo: ProcessGroupGloo | None = ProcessGroupGloo(
            dist.PrefixStore("samedevice/gloo", store), rank, size, timeout
        )
        self._c10d: C10dGroup | None = C10dGroup(dist.PrefixStore("samedevice/c10d", store), rank, size)
        self._c10d._register_backend(torch.device(device), C10dGroup.BackendType.GLOO, self._gloo)
        _live_groups.add(self)

    def getBackendName(self) -> str:
        return NAME if self._device == BACKEND else REFERENCE_NAME

    def shutdown(self) -> None:
        """Release Gloo now (``destroy_process_group`` calls this).

        Gloo stops its worker and transport threads only in its destructor, and caches in
        ``torch.distributed`` keep a destroyed group referenced until the interpreter exits.
        Torn down there, in whatever order finalization picks, Gloo aborted about one process
        in a hundred ("terminate called without an active exception"). Dropping our references
        here runs the destructors at once, on this thread.
        """
        self._c10d = None  # holds Gloo as its registered backend: release it first
        self._gloo = None
        _live_groups.discard(self)

    def _live(self) -> tuple[C10dGroup, ProcessGroupGloo]:
        if self._gloo is None or self._c10d is None:
            raise RuntimeError(f"{NAME} process group was destroyed (destroy_process_group)")
        return self._c10d, self._gloo

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return self._rank

    @property
    def _device_types(self) -> list[torch.device]:
        # Object collectives (broadcast_object_list, used by Lightning's strategy.broadcast)
        # pick their device from here, as they pick "cuda" for an NCCL group.
        return [torch.device(self._device)]

    # Each collective: sim tensors -> CPU copies -> Gloo -> copy back; others -> c10d (raises).
    # The reference run's CPU tensors go to Gloo as they are.

    def _host(self, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        if self._device != BACKEND:
            return tensors
        return [to_cpu(t).clone() for t in tensors]

    @staticmethod
    def _copy_back(dst: list[torch.Tensor], src: list[torch.Tensor]) -> None:
        for d, s in zip(dst, src, strict=True):
            if d is not s:
                d.copy_(from_cpu(s, d.get_device()))

    def _in_place(self, name: str, tensors: list[torch.Tensor], opts: Any) -> Any:
        """A collective that updates its tensors in place (all_reduce, broadcast, reduce)."""
        __tracebackhide__ = True
        c10d, gloo = self._live()
        if not self._ours(tensors):
            return getattr(c10d, name)(tensors, opts)  # raises c10d's own error for CPU
        host = self._host(tensors)
        getattr(gloo, name)(host, opts).wait()
        self._copy_back(tensors, host)
        return _done(tensors)

    @_plain
    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        opts = opts or dist.AllreduceOptions()
        integral = tensors and not any(t.is_floating_point() or t.is_complex() for t in tensors)
        if opts.reduceOp == dist.ReduceOp.AVG and integral and self._ours(tensors):
            # NCCL averages integers (sum, then C integer division); Gloo refuses AVG on them
            as_sum = dist.AllreduceOptions()
            as_sum.reduceOp = dist.ReduceOp.SUM
            as_sum.timeout = opts.timeout
            work = self._in_place("allreduce", tensors, as_sum)
            for t in tensors:
                t.copy_(torch.div(t, self._size, rounding_mode="trunc"))
            return work
        return self._in_place("allreduce", tensors, opts)

    @_plain
    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        return self._in_place("allreduce_coalesced", tensors, opts or dist.AllreduceCoalescedOptions())

    @_plain
    def broadcast(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        return self._in_place("broadcast", tensors, opts or dist.BroadcastOptions())

    @_plain
    def reduce(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        return self._in_place("reduce", tensors, opts or dist.ReduceOptions())

    @_plain
    def allgather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None) -> Any:
        __tracebackhide__ = True
        opts = opts or dist.AllgatherOptions()
        c10d, gloo = self._live()
        if not (self._ours(inputs) and all(self._ours(o) for o in outputs)):
            return c10d.allgather(outputs, inputs, opts)
        host_out = [self._host(o) for o in outputs]
        gloo.allgather(host_out, self._host(inputs), opts).wait()
        for dst, src in zip(outputs, host_out, strict=True):
            self._copy_back(dst, src)
        return _done(outputs)

    @_plain
    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> Any:
        __tracebackhide__ = True
        opts = opts or dist.AllgatherOptions()
        c10d, gloo = self._live()
        if not self._ours([output, input]):
            return c10d._allgather_base(output, input, opts)
        host_out, host_in = self._host([output, input])
        gloo._allgather_base(host_out, host_in, opts).wait()
        self._copy_back([output], [host_out])
        return _done([output])

    @_plain
    def barrier(self, opts: Any = None) -> Any:
        self._live()[1].barrier(opts or dist.BarrierOptions()).wait()
        return _done(None)


def _create(store: dist.Store, rank: int, size: int, timeout: timedelta) -> SimProcessGroup:
    return SimProcessGroup(store, rank, size, timeout)


def _create_reference(store: dist.Store, rank: int, size: int, timeout: timedelta) -> SimProcessGroup:
    return SimProcessGroup(store, rank, size, timeout, device="cpu")


_registered = False


def register() -> None:
    """Make ``backend="simgloo"`` available (idempotent; called by ``sim.enable``), and
    ``"refgloo"``, the reference run's: plain Gloo there left its teardown to interpreter
    finalization, and aborted a rank now and then as it did here (see ``shutdown``)."""
    global _registered
    if _registered or not dist.is_available():
        return
    if NAME not in dist.Backend.backend_list:
        dist.Backend.register_backend(NAME, _create, devices=[BACKEND])
    if REFERENCE_NAME not in dist.Backend.backend_list:
        dist.Backend.register_backend(REFERENCE_NAME, _create_reference, devices=["cpu"])
    _skip_flight_recorder()
    atexit.register(_shutdown_live_groups)
    _registered = True


def _skip_flight_recorder() -> None:
    """Keep torch 2.15's FlightRecorder hook off the simulated group.

    From 2.15 ``init_process_group`` attaches a FlightRecorder hook to every group whose
    backend is not in ``_FR_SELF_RECORDING_BACKENDS`` and has device types. The hook keys its
    entries on ``ProcessGroup::getGroupName()``, which throws ("ProcessGroup name not set")
    for a group that a backend creator returns whole, as ours is. Listing the simulated
    backend as self-recording is torch's own way to skip the hook; there is nothing for it to
    record (the collectives run on Gloo, on CPU copies).
    """
    from torch.distributed import distributed_c10d

    self_recording = getattr(distributed_c10d, "_FR_SELF_RECORDING_BACKENDS", None)
    if isinstance(self_recording, set):
        self_recording.update((NAME, REFERENCE_NAME))


class _LoggerWithoutTimer:
    """DDP's C++ logger for a model on the simulated GPUs, without its runtime statistics.

    Every few iterations the logger times forward and backward with the timer registered for
    the parameters' device type; CPU and CUDA have one, a Python backend cannot register one
    (it is a C++ registry), and the logger printed "Time stats are currently only collected for
    CPU and CUDA devices", which CUDA never prints. Everything else is the logger's own."""

    def __init__(self, logger: Any) -> None:
        self._logger = logger

    def set_runtime_stats_and_log(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)


def _quiet_ddp_timer() -> None:
    from torch.nn.parallel import DistributedDataParallel

    original = DistributedDataParallel.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        params = [p for p in self.module.parameters()] if isinstance(self.module, torch.nn.Module) else []
        with torch._C.DisableTorchFunction():
            on_sim = bool(params) and is_sim(params[0])
        if on_sim and getattr(self, "logger", None) is not None:
            self.logger = _LoggerWithoutTimer(self.logger)

    DistributedDataParallel.__init__ = __init__  # type: ignore[method-assign]


def alias_nccl() -> None:
    """Under the CUDA alias, ``backend="nccl"`` (CUDA's default) means the simulated group."""
    original = dist.init_process_group
    if getattr(original, "_samedevice", False):
        return
    _quiet_ddp_timer()

    def _map(backend: Any) -> Any:
        if isinstance(backend, str) and backend.lower() in ("nccl", "cuda:nccl"):
            return NAME
        return backend

    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        return original(_map(backend), *args, **kwargs)

    init_process_group._samedevice = True  # type: ignore[attr-defined]
    init_process_group.__wrapped__ = original  # type: ignore[attr-defined]
    dist.init_process_group = init_process_group
    original_new_group = dist.new_group

    def new_group(*args: Any, backend: Any = None, **kwargs: Any) -> Any:
        return original_new_group(*args, backend=_map(backend), **kwargs)

    dist.new_group = new_group
