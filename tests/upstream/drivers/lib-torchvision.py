"""Upstream library driver: torchvision's resnet18 (no weights) trained a few steps on "cuda".

With ``SAMEDEVICE_UPSTREAM_BUG=1`` the classifier head is replaced *after* ``.to("cuda")``, so
it stays on the CPU (CUDA names ``mat1`` of ``addmm``).
"""

from __future__ import annotations

import os

import torch
from _report import imported
from _torchvision_ops import declare_torchvision_ops

declare_torchvision_ops()  # PyPI's torchvision is a CUDA build: its C++ ops cannot load here
import torchvision  # noqa: E402

imported(torchvision, "torchvision")
BUG = os.environ.get("SAMEDEVICE_UPSTREAM_BUG") == "1"
torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=4).to("cuda")
if BUG:
    model.fc = torch.nn.Linear(512, 4)
model.train()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(2, 3, 32, 32).to("cuda")
y = torch.tensor([0, 3]).to("cuda")
losses = []
for _ in range(3):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.detach())
