"""Memory statistics of the simulated GPUs: the bytes their tensors hold, counted as CUDA does.

Every simulated tensor's memory is a CPU allocation wrapped by ``_plumbing.from_cpu``. A new
allocation never overlaps a live one, while a view (or a CPU view wrapped again) starts inside
one, so "does this pointer fall inside a live block?" tells a fresh allocation from a re-wrap.
A block is forgotten when its CPU storage dies (a weak reference to the storage's Python
object, which PyTorch keeps for as long as the C++ storage lives).

Sizes are rounded up to CUDA's caching-allocator granule (512 bytes), so ``memory_allocated()``
after ``torch.zeros(1, device="cuda")`` reads 512, as on a GPU. "Reserved" memory models the
caching allocator's pool: it grows with the peak in 2 MiB segments and only ``empty_cache()``
returns it.
"""

from __future__ import annotations

import threading
import weakref

import torch

GRANULE = 512  # CUDA caching allocator: kMinBlockSize
SEGMENT = 2 * 2**20  # CUDA caching allocator: kSmallBuffer, the smallest segment it reserves


def _round(n: int, unit: int) -> int:
    return -(-n // unit) * unit


# Per device: [allocated, peak, reserved, peak reserved, allocations] (a list: the per-op path
# updates it in place, cheaper than five dictionaries)
FIELDS = {"allocated": 0, "peak": 1, "reserved": 2, "peak_reserved": 3, "allocations": 4}


class Tracker:
    def __init__(self) -> None:
        self.on = False
        self._lock = threading.Lock()
        # block start address -> (device index, counted size, weakref to its storage, end address)
        self._blocks: dict[int, tuple] = {}
        self._devices: dict[int, list[int]] = {}
        # weak references (keyed by block start) to storages that died, not yet applied: the
        # callback may run inside add() (a garbage collection while the lock is held), so it
        # only queues; drain() applies the queue under the lock. The callback is the queue's
        # own append: no closure made per allocation and no Python frame run per free.
        self._pending: list[weakref.KeyedRef] = []
        self._on_free = self._pending.append

    def _device(self, index: int) -> list[int]:
        d = self._devices.get(index)
        if d is None:
            d = self._devices[index] = [0, 0, 0, 0, 0]
        return d

    def add(self, c: torch.Tensor, index: int) -> None:
        """Called by ``from_cpu`` for each CPU tensor wrapped as ``sim:index`` (per-op path: keep lean)."""
        storage = c.untyped_storage()
        nbytes = storage.nbytes()
        if not nbytes:
            return
        start = storage.data_ptr()
        blocks = self._blocks
        with self._lock:
            if self._pending:
                self.drain()
            if start in blocks:
                return  # the same storage wrapped again
            # A CPU view of a sim tensor (DLPack-imported, so not resizable) has a storage of its
            # own that starts inside a live block. Storages the CPU allocator made are resizable
            # and never overlap a live block, so only the rare others pay for the search.
            if not storage.resizable():
                for block_start, block in blocks.items():
                    if block_start < start < block[3]:
                        return
            size = -(-nbytes // GRANULE) * GRANULE
            blocks[start] = (index, size, weakref.KeyedRef(storage, self._on_free, start), start + nbytes)
            d = self._devices.get(index) or self._device(index)
            now = d[0] = d[0] + size
            d[4] += 1
            if now > d[1]:
                d[1] = now
            if now > d[2]:
                d[2] = _round(now, SEGMENT)
                if d[2] > d[3]:
                    d[3] = d[2]

    def drain(self) -> None:
        """Apply the frees queued by the weak-reference callbacks (call with the lock held)."""
        pending = self._pending
        blocks = self._blocks
        while pending:
            ref = pending.pop()
            block = blocks.get(ref.key)
            if block is None or block[2] is not ref:
                continue  # a newer block at the same address (its storage was freed first)
            del blocks[ref.key]
            self._devices[block[0]][0] -= block[1]

    def read(self, field: str, index: int) -> int:
        """One statistic of device ``index``: a key of ``FIELDS`` (``"allocated"``, ``"peak"``, …)."""
        with self._lock:
            self.drain()
            d = self._devices.get(index)
            return d[FIELDS[field]] if d else 0

    def live_blocks(self) -> int:
        with self._lock:
            self.drain()
            return len(self._blocks)

    def empty_cache(self) -> None:
        with self._lock:
            self.drain()
            for d in self._devices.values():
                d[2] = _round(d[0], SEGMENT)

    def reset_peak(self, index: int) -> None:
        with self._lock:
            self.drain()
            d = self._device(index)
            d[1] = d[0]
            d[3] = d[2]

    def stats(self, index: int) -> dict[str, int]:
        """The subset of ``torch.cuda.memory_stats()`` keys programs read."""
        with self._lock:
            self.drain()
            a, p, r, pr, n = self._devices.get(index) or (0, 0, 0, 0, 0)
        return {
            "allocated_bytes.all.current": a,
            "allocated_bytes.all.peak": p,
            "active_bytes.all.current": a,
            "active_bytes.all.peak": p,
            "reserved_bytes.all.current": r,
            "reserved_bytes.all.peak": pr,
            "allocation.all.allocated": n,
            "num_alloc_retries": 0,
            "num_ooms": 0,
        }


TRACKER = Tracker()
