"""Upstream driver for lightning-lr-find-ddp-sync-dist: a whole ``pytorch_lightning.Trainer``.

Lightning-AI/pytorch-lightning#19912, as reported: DDP over two processes (NCCL), a value
logged with ``sync_dist=True``, ``Tuner(trainer).lr_find(...)`` and then ``trainer.fit(...)``.
The finder's teardown moves the logged states to the CPU; from 2.1.0 to 2.3.3 nothing moves
them back, and the real fit's sanity check all-reduces a CPU batch count in the NCCL group.
2.0.9 moved results back at each run's start; 2.4.0 (PR #19814) moves them on every log.

Nothing differs from the GPU run: the stock ``accelerator="gpu"``, ``devices=2`` and
``DDPStrategy`` (with ``device_ids`` and CUDA streams) run on the simulated machine of two GPUs.

Run by tests/upstream with one release on PYTHONPATH; Lightning starts rank 1 by running this
file again, as ``strategy="ddp"`` does for any script.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from _report import imported, report
from pytorch_lightning.strategies import DDPStrategy
from pytorch_lightning.tuner import Tuner
from torch.utils.data import DataLoader, TensorDataset


class Regression(pl.LightningModule):
    def __init__(self, lr: float = 1e-2) -> None:
        super().__init__()
        self.lr = lr  # lr_find writes its suggestion here
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = F.mse_loss(self.layer(x), y)
        self.log("train_loss", loss, sync_dist=True)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", F.mse_loss(self.layer(x), y), sync_dist=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def loader() -> DataLoader:
    x = torch.randn(64, 4, generator=torch.Generator().manual_seed(0))
    return DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)


def main() -> None:
    imported(pl, "pytorch-lightning")
    pl.seed_everything(0)
    model = Regression()
    trainer = pl.Trainer(
        accelerator="gpu", devices=2,
        strategy=DDPStrategy(timeout=timedelta(seconds=120)),  # a hung rank fails fast
        max_epochs=1, limit_train_batches=4, limit_val_batches=2, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )
    Tuner(trainer).lr_find(model, train_dataloaders=loader(), val_dataloaders=loader(),
                           num_training=6, early_stop_threshold=None)
    report(event="lr_find done", rank=trainer.global_rank)
    trainer.fit(model, train_dataloaders=loader(), val_dataloaders=loader())
    report(event="done", rank=trainer.global_rank,
           metrics={k: float(v) for k, v in sorted(trainer.callback_metrics.items())})


if __name__ == "__main__":
    main()
