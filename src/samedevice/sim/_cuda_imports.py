"""Modules patched or refused when they are imported under the CUDA machine mode:
``torch.utils.cpp_extension`` (CUDA builds refused), ``safetensors`` (``device="cuda"``) and
``triton`` (refused). They may be imported after ``enable()``, or never: an import hook
patches them as they load."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

import torch

from ._registry import (
    REGISTRY,
    STATE,
    Entry,
    Unsupported,
    UnsupportedImport,
    device_index,
    home,
    refuse,
)

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
            if STATE.on and __is_cuda(args, kwargs):
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
    "fall back as on a machine without it; `importlib.util.find_spec` answers without raising): "
    "Triton compiles kernels for a real GPU", None, refused=True)


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
            if STATE.on and framework in ("pt", "torch"):
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

ON_IMPORT: dict[str, Callable[[Any], None]] = {
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


class _RefusedLoader(importlib.abc.Loader):
    """Loads nothing: Triton compiles kernels for a real GPU, which the simulator has not."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        raise UnsupportedImport(f"{spec.name} is not simulated: Triton compiles kernels for a real GPU")

    def exec_module(self, module: Any) -> None:  # never reached: create_module refuses
        raise UnsupportedImport(f"{module.__name__} is not simulated")


class _ImportHook(importlib.abc.MetaPathFinder):
    """Patch late-imported modules; refuse ``import triton`` while the machine mode is on."""

    after_import: Callable[[str], None] | None = None  # set by _machine: apply its entries

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if not STATE.on:
            return None
        if fullname == "triton" or fullname.startswith("triton."):
            # a spec whose loading fails: `import triton` raises Unsupported, while a probe
            # (`importlib.util.find_spec`, as transformers' `is_triton_available` does) gets an
            # answer instead of an exception, and then finds no installed distribution
            return importlib.machinery.ModuleSpec(fullname, _RefusedLoader())
        patch = ON_IMPORT.get(fullname)
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
            if self.after_import is not None:
                self.after_import(fullname)

        spec.loader.exec_module = run  # type: ignore[method-assign]
        return spec


HOOK = _ImportHook()
