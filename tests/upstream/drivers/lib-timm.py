"""Upstream library driver: a tiny timm ViT (built from its config, no weights) trained on "cuda".

Run by tests/upstream/test_libraries.py in "cuda" mode (the simulated GPU) and "cpu" mode; the
module-level ``losses`` and ``model`` are compared. With ``SAMEDEVICE_UPSTREAM_BUG=1`` the batch
stays on the CPU (the bug CUDA reports as a convolution type mismatch).
"""

from __future__ import annotations

import os

import torch
from _report import imported
from _torchvision_ops import declare_torchvision_ops

declare_torchvision_ops()  # timm imports torchvision, a CUDA build here (see _torchvision_ops)
import timm  # noqa: E402

imported(timm, "timm")
BUG = os.environ.get("SAMEDEVICE_UPSTREAM_BUG") == "1"
torch.manual_seed(0)
model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8,
                          depth=2, num_classes=3).to("cuda")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(4, 3, 32, 32)
y = torch.tensor([0, 1, 2, 1])
if not BUG:
    x, y = x.to("cuda"), y.to("cuda")
losses = []
for _ in range(3):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.detach())
