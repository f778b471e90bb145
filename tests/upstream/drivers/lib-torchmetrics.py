"""Upstream library driver: torchmetrics metrics updated with "cuda" tensors.

With ``SAMEDEVICE_UPSTREAM_BUG=1`` the metric is never moved to the device (its state stays
on the CPU); torchmetrics catches CUDA's error and raises its own text.
"""

from __future__ import annotations

# ruff: noqa: E402 -- torchvision's op schemas must be declared before any import of it
from _torchvision_ops import declare_torchvision_ops

declare_torchvision_ops()  # before anything imports torchvision (PyPI's wheel is a CUDA build)

import os

import torch
import torchmetrics
from _report import imported

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
