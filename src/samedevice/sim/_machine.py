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

import functools
import sys
from typing import Any

from . import _cuda_api, _cuda_imports, _cuda_streams
from ._memory import TRACKER
from ._naming import BACKEND
from ._registry import CUDA_VERSION, CUDNN_VERSION, GPU, REGISTRY, STATE, Unsupported

__all__ = ["REGISTRY", "Unsupported", "install", "is_on", "properties_table", "table", "uninstall"]
_MODULES = (_cuda_api, _cuda_streams, _cuda_imports)  # each registers its entries on import

_saved: dict[str, Any] = {}
_MISSING = object()


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


def _apply_entries(only: str | None = None) -> None:
    for entry in REGISTRY.values():
        if entry.value is None or (only is not None and entry.module != only):
            continue
        module = _resolve(entry.module)
        if module is None or entry.target in _saved:
            continue
        original = getattr(module, entry.attr, _MISSING)
        _saved[entry.target] = original
        setattr(module, entry.attr, _keeping_wrapped(entry.value, original))


def _keeping_wrapped(value: Any, original: Any) -> Any:
    """``value``, carrying the ``__wrapped__`` of the decorated function it stands in for.

    PyTorch reads it at import: ``torch._dynamo.variables.torch`` lists
    ``torch.cuda.use_mem_pool.__wrapped__`` (a ``contextmanager``), so a stand-in without it
    makes the first ``import torch._dynamo`` (``torch.optim``'s first step) raise.
    """
    wrapped = getattr(original, "__wrapped__", None)
    if wrapped is None or not callable(value) or isinstance(value, type) or hasattr(value, "__wrapped__"):
        return value

    @functools.wraps(value)
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return value(*args, **kwargs)

    stand_in.__wrapped__ = wrapped  # type: ignore[attr-defined]
    return stand_in


def install(target: str = BACKEND) -> None:
    """Swap the registry into place (the alias just went on); idempotent.

    ``target="cpu"``: the plain-CPU reference run (``samedevice run --cpu``) answers the same
    calls, so a program takes the same path in both runs; its "GPU" tensors are CPU tensors.
    """
    if STATE.on:
        return
    STATE.target = target
    import torch.cuda.graphs
    import torch.cuda.jiterator
    import torch.cuda.memory
    import torch.cuda.nccl
    import torch.cuda.nvtx  # noqa: F401  (submodules named in the registry)

    _apply_entries()
    STATE.on = True
    TRACKER.on = True
    for name, patch in _cuda_imports.ON_IMPORT.items():
        if name in sys.modules:
            patch(sys.modules[name])
    _cuda_imports.HOOK.after_import = _apply_entries
    if _cuda_imports.HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _cuda_imports.HOOK)


def uninstall() -> None:
    """Put PyTorch's originals back (the alias went off)."""
    if not STATE.on:
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
    STATE.on = False


def is_on() -> bool:
    return STATE.on


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
