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

import bisect
import threading
import weakref

import torch

GRANULE = 512  # CUDA caching allocator: kMinBlockSize
SEGMENT = 2 * 2**20  # CUDA caching allocator: kSmallBuffer, the smallest segment it reserves


def _round(n: int, unit: int) -> int:
    return -(-n // unit) * unit


class Tracker:
    def __init__(self) -> None:
        self.on = False
        self._lock = threading.Lock()
        self._starts: list[int] = []  # sorted block start addresses
        self._blocks: dict[int, tuple] = {}  # start -> (end, device index, counted size, weakref)
        self.allocated: dict[int, int] = {}
        self.peak: dict[int, int] = {}
        self.reserved: dict[int, int] = {}
        self.peak_reserved: dict[int, int] = {}
        self.allocations: dict[int, int] = {}
        # weak references (keyed by block start) to storages that died, not yet applied: the
        # callback may run inside add() (a garbage collection while the lock is held), so it
        # only queues; drain() applies the queue under the lock
        self._pending: list[weakref.KeyedRef] = []

    def add(self, c: torch.Tensor, index: int) -> None:
        """Called by ``from_cpu`` for each CPU tensor wrapped as ``sim:index`` (per-op path: keep lean)."""
        storage = c.untyped_storage()
        nbytes = storage.nbytes()
        if not nbytes:
            return
        start = storage.data_ptr()
        starts = self._starts
        with self._lock:
            if self._pending:
                self.drain()
            i = bisect.bisect_right(starts, start)
            if i and self._blocks[starts[i - 1]][0] > start:
                return  # inside a live block: a view of memory already counted
            size = -(-nbytes // GRANULE) * GRANULE
            starts.insert(i, start)
            # a keyed weak reference whose callback is the queue's own append: no closure made
            # per allocation and no Python frame run per free (cheaper than weakref.finalize)
            self._blocks[start] = (start + nbytes, index, size,
                                   weakref.KeyedRef(storage, self._pending.append, start))
            allocated = self.allocated
            now = allocated[index] = allocated.get(index, 0) + size
            self.allocations[index] = self.allocations.get(index, 0) + 1
            if now > self.peak.get(index, 0):
                self.peak[index] = now
            if now > self.reserved.get(index, 0):
                self.reserved[index] = _round(now, SEGMENT)
                self.peak_reserved[index] = max(self.peak_reserved.get(index, 0), self.reserved[index])

    def drain(self) -> None:
        """Apply the frees queued by the weak-reference callbacks (call with the lock held)."""
        pending = self._pending
        blocks = self._blocks
        while pending:
            ref = pending.pop()
            start = ref.key
            block = blocks.get(start)
            if block is None or block[3] is not ref:
                continue  # a newer block at the same address (its storage was freed first)
            del blocks[start]
            i = bisect.bisect_left(self._starts, start)
            if i < len(self._starts) and self._starts[i] == start:
                del self._starts[i]
            self.allocated[block[1]] = self.allocated.get(block[1], 0) - block[2]

    def read(self, table: dict[int, int], index: int) -> int:
        with self._lock:
            self.drain()
            return table.get(index, 0)

    def empty_cache(self) -> None:
        with self._lock:
            self.drain()
            for index, now in self.allocated.items():
                self.reserved[index] = _round(now, SEGMENT)

    def reset_peak(self, index: int) -> None:
        with self._lock:
            self.drain()
            self.peak[index] = self.allocated.get(index, 0)
            self.peak_reserved[index] = self.reserved.get(index, 0)

    def stats(self, index: int) -> dict[str, int]:
        """The subset of ``torch.cuda.memory_stats()`` keys programs read."""
        with self._lock:
            self.drain()
        a, p = self.allocated.get(index, 0), self.peak.get(index, 0)
        r, pr = self.reserved.get(index, 0), self.peak_reserved.get(index, 0)
        out: dict[str, int] = {
            "allocated_bytes.all.current": a,
            "allocated_bytes.all.peak": p,
            "active_bytes.all.current": a,
            "active_bytes.all.peak": p,
            "reserved_bytes.all.current": r,
            "reserved_bytes.all.peak": pr,
        }
        out["allocation.all.allocated"] = self.allocations.get(index, 0)
        out["num_alloc_retries"] = 0
        out["num_ooms"] = 0
        return out


TRACKER = Tracker()
