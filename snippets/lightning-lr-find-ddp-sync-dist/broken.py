"""PyTorch Lightning 2.1.0-2.3.3, reduced: after the learning-rate finder, logged metric
states sit on the CPU (moved there at teardown); the real fit reuses them, and syncing the
batch counter with `sync_dist=True` hands a CPU tensor to an NCCL-only process group.

Upstream: Lightning-AI/pytorch-lightning#19813 and #19912 (fixed by PR #19814, 2.4.0).
Run with two processes, as `Trainer(strategy="ddp", devices=2)` would.
"""

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class ResultMetric:
    """Lightning's _ResultMetric (mean reduction): a float sum and an int count, 0-dim."""

    def __init__(self):
        self.value = None
        self.cumulated_batch_size = None

    def update(self, value, batch_size):
        if self.value is None:  # register_key: placed on the first value's device, once
            self.value = torch.tensor(0.0, device=value.device)
            self.cumulated_batch_size = torch.tensor(0, device=value.device)
        self.value = self.value + value * batch_size  # a CPU 0-dim sum silently becomes CUDA
        self.cumulated_batch_size += batch_size  # a Python int: the CPU count stays CPU

    def cpu(self):
        """_TrainingEpochLoop.teardown -> self._results.cpu()"""
        self.value, self.cumulated_batch_size = self.value.cpu(), self.cumulated_batch_size.cpu()

    def compute(self):
        """sync_dist=True: all-reduce the sum and the count across ranks."""
        value, count = self.value.clone(), self.cumulated_batch_size.clone()
        dist.all_reduce(value)
        dist.all_reduce(count)
        return value / count


def run(rank, world_size):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    device = torch.device("cuda", rank)

    metric = ResultMetric()
    metric.update(torch.tensor(1.0, device=device), batch_size=4)  # Tuner(...).lr_find(...)
    metric.cpu()  # the finder's fit tears down; nothing moves the results back
    metric.update(torch.tensor(2.0, device=device), batch_size=4)  # trainer.fit(...)
    metric.compute()  # the sync fails here on every rank
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2)
