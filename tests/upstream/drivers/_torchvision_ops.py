"""Let torchvision's pure-Python parts import on a CPU-only PyTorch.

PyPI's torchvision wheels for Linux are CUDA builds: their C++ ops (``torchvision/_C.so``)
link ``libtorch_cuda.so``, which a CPU build of PyTorch lacks, so torchvision quietly skips
loading them -- and torchvision 0.28 then fails at import, registering fake kernels for two
ops it never defined (``RuntimeError: operator torchvision::nms does not exist``). Lightly
needs only pure-Python parts of torchvision (``torchvision.ops.StochasticDepth``, imported
by ``lightly.models.utils``; timm, torchmetrics, transformers, peft and accelerate import
``torchvision`` at import too), so declaring the two schemas first is enough. The ops still
have no kernels: calling them would fail, and nothing in the drivers calls them.
"""

from __future__ import annotations

import torch

_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_library: torch.library.Library | None = None


def declare_torchvision_ops() -> None:
    """Declare ``torchvision::nms``/``qnms`` before torchvision is imported (CPU builds only:
    with a CUDA build torchvision loads its own ops, and a second definition would clash).
    ``torch.backends.cuda.is_built()`` asks the build itself: the simulated CUDA machine sets
    ``torch.version.cuda`` to a stand-in string, so that cannot tell."""
    global _library
    if _library is not None or torch.backends.cuda.is_built():
        return
    _library = torch.library.Library("torchvision", "DEF")  # kept alive: dropping it undefines
    for schema in _SCHEMAS:
        _library.define(schema)
