"""runningnorm's tests. The ``accelerator`` fixture (samedevice's pytest
plugin) is real CUDA on a GPU runner and the simulated accelerator elsewhere,
so a CPU-only CI runs the GPU path too."""

import torch
from runningnorm import RunningNorm


def test_normalises_with_the_running_statistics():
    norm = RunningNorm(3, momentum=1.0)
    x = torch.tensor([[1.0, 2.0, 3.0], [3.0, 6.0, 9.0]])
    out = norm(x)
    torch.testing.assert_close(norm.mean, torch.tensor([2.0, 4.0, 6.0]))
    torch.testing.assert_close(out.mean(dim=0), torch.zeros(3))


def test_runs_on_the_accelerator(accelerator):
    norm = RunningNorm(3).to(accelerator)
    x = torch.randn(8, 3, device=accelerator)
    out = norm(x)
    assert out.device == x.device
    assert norm.mean.device == x.device
