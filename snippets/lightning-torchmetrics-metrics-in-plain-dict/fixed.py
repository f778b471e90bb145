"""torchmetrics metrics on a LightningModule, in an `nn.ModuleDict`, reduced to pure PyTorch:
the metrics are registered child modules, so `Module.to()` reaches them and their own
`_apply()` moves their states with the model.

Upstream: https://github.com/Lightning-AI/pytorch-lightning/pull/5280 (the device-placement
docs written after issue #4408).
"""

import torch
import torch.nn.functional as F
from torch import nn


class Metric(nn.Module):
    """torchmetrics.Metric, reduced: states added with add_state() are plain attributes that
    the metric's own _apply() moves -- when the metric is moved."""

    def __init__(self):
        super().__init__()
        self._defaults = {}

    def add_state(self, name, default):
        setattr(self, name, default)
        self._defaults[name] = default.clone()

    def _apply(self, fn, *args, **kwargs):
        this = super()._apply(fn, *args, **kwargs)
        for key, value in this._defaults.items():
            this._defaults[key] = fn(value)
            setattr(this, key, fn(getattr(this, key)))
        return this


class BinaryAccuracy(Metric):
    """torchmetrics' BinaryAccuracy (a BinaryStatScores), global average, reduced."""

    def __init__(self, threshold=0.5):
        super().__init__()
        self.threshold = threshold
        for name in ("tp", "fp", "tn", "fn"):
            self.add_state(name, torch.zeros(1, dtype=torch.long))

    def update(self, preds, target):
        preds = (preds > self.threshold).long()
        tp = ((target == preds) & (target == 1)).sum()
        fn = ((target != preds) & (target == 1)).sum()
        fp = ((target != preds) & (target == 0)).sum()
        tn = ((target == preds) & (target == 0)).sum()
        self.tp = self.tp + tp
        self.fp = self.fp + fp
        self.tn = self.tn + tn
        self.fn = self.fn + fn

    def compute(self):
        return (self.tp + self.tn).float() / (self.tp + self.tn + self.fp + self.fn)


class LitClassifier(nn.Module):
    """Stands in for a pl.LightningModule."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 1)
        self.metrics = nn.ModuleDict({"train_acc": BinaryAccuracy()})  # registered children

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.layer(x).squeeze(-1)
        loss = F.binary_cross_entropy_with_logits(logits, y.float())
        self.metrics["train_acc"].update(logits.sigmoid(), y)
        return loss


torch.manual_seed(0)
device = "cuda"
model = LitClassifier().to(device)  # what Trainer(accelerator="gpu") does with the module
batch = (torch.randn(8, 4, device=device), torch.randint(0, 2, (8,), device=device))
loss = model.training_step(batch, 0)
train_acc = model.metrics["train_acc"].compute()
print(loss.item(), train_acc)
