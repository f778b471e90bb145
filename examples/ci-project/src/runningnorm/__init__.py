"""runningnorm: normalise features with running statistics.

The running mean and variance are registered buffers, so
``RunningNorm(...).to("cuda")`` moves them with the module. (``bug.patch``
turns them back into plain attributes: the bug this example's CI catches
without a GPU.)
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["RunningNorm"]


class RunningNorm(nn.Module):
    def __init__(self, dim: int, momentum: float = 0.1,
                 eps: float = 1e-5) -> None:
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            with torch.no_grad():
                self.mean.lerp_(x.mean(dim=0), self.momentum)
                self.var.lerp_(x.var(dim=0), self.momentum)
        return (x - self.mean) / torch.sqrt(self.var + self.eps)
