"""PyTorch Lightning 2.4.0's fix, reduced: every log call moves the metric's states to the
device of the incoming value, so the count is on the GPU again when it is synced.

Upstream: https://github.com/Lightning-AI/pytorch-lightning/pull/19814
"""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class ResultMetric:
    """Lightning's _ResultMetric (mean reduction): a float sum and an int count, 0-dim."""

    def __init__(self):
        self.value = None
        self.cumulated_batch_size = None

    def to(self, device):
        self.value = self.value.to(device)
        self.cumulated_batch_size = self.cumulated_batch_size.to(device)
        return self

    def update(self, value, batch_size):
        if self.value is None:
            self.value = torch.tensor(0.0, device=value.device)
            self.cumulated_batch_size = torch.tensor(0, device=value.device)
        self.to(value.device)  # 2.4.0: _ResultCollection.log does self[key].to(value.device)
        self.value = self.value + value * batch_size
        self.cumulated_batch_size += batch_size

    def cpu(self):
        """_TrainingEpochLoop.teardown -> self._results.cpu()"""
        return self.to("cpu")

    def compute(self):
        """sync_dist=True: all-reduce the sum and the count across ranks."""
        value, count = self.value.clone(), self.cumulated_batch_size.clone()
        dist.all_reduce(value)
        dist.all_reduce(count)
        return value / count


def run(rank, world_size, out_dir):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    device = torch.device("cuda", rank)

    metric = ResultMetric()
    metric.update(torch.tensor(1.0, device=device), batch_size=4)
    metric.cpu()
    metric.update(torch.tensor(2.0, device=device), batch_size=4)
    mean = metric.compute()
    torch.save(mean.cpu(), os.path.join(out_dir, f"mean_rank{rank}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    out_dir = tempfile.mkdtemp()
    mp.spawn(run, args=(2, out_dir), nprocs=2)
    means = [torch.load(os.path.join(out_dir, f"mean_rank{r}.pt")) for r in range(2)]
    print("mean loss per rank:", [round(m.item(), 3) for m in means])  # the ranks agree
