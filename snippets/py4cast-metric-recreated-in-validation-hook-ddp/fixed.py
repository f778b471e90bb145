"""py4cast after PR #42, reduced: the metric is created once, in `__init__`, and moved to the GPU
with the module; `on_validation_start` no longer replaces it, so the states the DDP sync gathers
are CUDA tensors.

Upstream: https://github.com/meteofrance/py4cast/pull/42 (commit f25fd99).
"""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


def gather_all_tensors(result):
    """torchmetrics/utilities/distributed.py, reduced (states of equal shape on every rank)."""
    result = result.contiguous()
    world_size = dist.get_world_size()
    dist.barrier()
    local_size = torch.tensor(result.shape, device=result.device)
    local_sizes = [torch.zeros_like(local_size) for _ in range(world_size)]
    dist.all_gather(local_sizes, local_size)
    gathered_result = [torch.zeros_like(result) for _ in range(world_size)]
    dist.all_gather(gathered_result, result)
    return gathered_result


class Metric(nn.Module):
    """torchmetrics.Metric, reduced: states are plain attributes that `_apply` (`.to()`) moves."""

    def __init__(self):
        super().__init__()
        self._defaults = {}
        self._device = torch.device("cpu")

    def add_state(self, name, default, dist_reduce_fx="sum"):
        setattr(self, name, default)
        self._defaults[name] = default.detach().clone()

    @property
    def device(self):
        return self._device

    def _apply(self, fn, recurse=True):
        this = super()._apply(fn, recurse)
        for key in this._defaults:
            this._defaults[key] = fn(this._defaults[key])
            setattr(this, key, fn(getattr(this, key)))
        this._device = fn(torch.zeros(1, device=self.device)).device
        return this

    def sync(self):
        """Gather every state from all ranks and reduce it (dist_reduce_fx="sum")."""
        for key in self._defaults:
            setattr(self, key, torch.stack(gather_all_tensors(getattr(self, key))).sum(dim=0))


class MetricACC(Metric):
    """py4cast/metrics.py: anomaly correlation, summed per prediction step and feature."""

    def __init__(self):
        super().__init__()
        self.add_state("sum_acc", default=torch.tensor(0.0), dist_reduce_fx="sum")
        self.add_state("step_count", default=torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, preds, target):
        num = (preds * target).mean(dim=2)  # averaged over the grid
        square_denom = (preds**2).mean(dim=2) * (target**2).mean(dim=2)
        res = torch.mean(num / torch.sqrt(square_denom), dim=0)
        if not self.sum_acc.ndim:  # sum_acc not yet initialised as a (pred_steps, features) tensor
            self.sum_acc = torch.zeros(*res.shape, device=self.device)
        self.sum_acc += res.to(device=self.device)  # follows the metric's device, not the inputs
        self.step_count += 1

    def compute(self):
        self.sync()  # torchmetrics' compute() wrapper syncs first under DDP
        return self.sum_acc / self.step_count


class AutoRegressiveLightning(nn.Module):
    """py4cast/lightning.py, the LightningModule, reduced to the metric's life cycle."""

    def __init__(self):
        super().__init__()
        self.model = nn.Linear(3, 3)
        self.acc_metric = MetricACC()  # created in __init__: moved with the module

    def on_validation_start(self):
        pass  # PR #42 deleted the re-creation: the metric built in __init__ is used

    def validation_step(self, batch, batch_idx):
        inputs, target = batch
        prediction = self.model(inputs)
        self.acc_metric.update(prediction, target)

    def on_validation_epoch_end(self):
        return self.acc_metric.compute()


def run(rank, world_size, out_dir):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    device = torch.device("cuda", rank)
    torch.manual_seed(rank)

    lightning_module = AutoRegressiveLightning().to(device)  # the DDP strategy's setup
    lightning_module.on_validation_start()
    for batch_idx in range(2):
        batch = torch.randn(4, 2, 5, 3, device=device), torch.randn(4, 2, 5, 3, device=device)
        lightning_module.validation_step(batch, batch_idx)
    mean_acc = lightning_module.on_validation_epoch_end()
    torch.save(mean_acc.cpu(), os.path.join(out_dir, f"mean_acc_rank{rank}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    out_dir = tempfile.mkdtemp()
    mp.spawn(run, args=(2, out_dir), nprocs=2)
    mean_acc = [torch.load(os.path.join(out_dir, f"mean_acc_rank{r}.pt")) for r in range(2)]
    print("mean ACC per rank:", [round(m.mean().item(), 3) for m in mean_acc])  # the ranks agree
