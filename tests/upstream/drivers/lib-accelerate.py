"""Upstream library driver: ``Accelerator().prepare`` trains a small model on the GPU it finds.

With ``SAMEDEVICE_UPSTREAM_BUG=1`` an evaluation batch is built by hand on the CPU instead of
coming through the prepared DataLoader (CUDA names ``mat1`` of ``addmm``).
"""

from __future__ import annotations

import os

import torch
from _report import imported
from _torchvision_ops import declare_torchvision_ops

declare_torchvision_ops()  # accelerate imports torchvision, a CUDA build here (see _torchvision_ops)
import accelerate  # noqa: E402

imported(accelerate, "accelerate")
BUG = os.environ.get("SAMEDEVICE_UPSTREAM_BUG") == "1"
accelerate.utils.set_seed(0)
accelerator = accelerate.Accelerator()
accelerator_on_gpu = int(accelerator.device.type == "cuda")
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
model, opt, loader = accelerator.prepare(model, opt, loader)
losses = []
for x, y in loader:
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    accelerator.backward(loss)
    opt.step()
    losses.append(loss.detach())
check = torch.randn(2, 4)
if not BUG:
    check = check.to(accelerator.device)
prediction = model(check)
