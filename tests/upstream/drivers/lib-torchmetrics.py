"""Upstream library driver: torchmetrics metrics updated with "cuda" tensors.

With ``SAMEDEVICE_UPSTREAM_BUG=1`` the metric is never moved to the device (its state stays
on the CPU); torchmetrics catches CUDA's error and raises its own text.
"""

from __future__ import annotations

import os

import torch
from _report import imported
from _torchvision_ops import declare_torchvision_ops

declare_torchvision_ops()  # torchmetrics imports torchvision, a CUDA build here (see _torchvision_ops)
import torchmetrics  # noqa: E402

imported(torchmetrics, "torchmetrics")
BUG = os.environ.get("SAMEDEVICE_UPSTREAM_BUG") == "1"
torch.manual_seed(0)
accuracy = torchmetrics.classification.MulticlassAccuracy(num_classes=3)
mse = torchmetrics.MeanSquaredError()
if not BUG:
    accuracy, mse = accuracy.to("cuda"), mse.to("cuda")
for _ in range(3):
    preds = torch.randn(8, 3).to("cuda")
    target = torch.randint(0, 3, (8,)).to("cuda")
    accuracy.update(preds, target)
    mse.update(preds[:, 0], target.float())
acc = accuracy.compute()
err = mse.compute()
