"""random-fourier-features-pytorch 0.1, `rff.functional.positional_encoding`, reduced: the
frequency indices come from `torch.arange(m)` without `device=`, inside the function that
`PositionalEncoding.forward` calls. The layer has no parameters or buffers, so moving the model
cannot fix it: a CPU tensor is created on every call.

Upstream: https://github.com/jmclong/random-fourier-features-pytorch/pull/4 (fixes #2;
released in 0.2). In 0.1 the function is `@torch.jit.script`-compiled and uses `np.pi` and
`np.newaxis`; here it is plain Python with `math.pi` and `None`.
"""

import math

import torch
from torch import Tensor, nn


def positional_encoding(v: Tensor, sigma: float, m: int) -> Tensor:
    """rff/functional.py in 0.1."""
    j = torch.arange(m)  # no device: a CPU tensor whatever `v` is
    coeffs = 2 * math.pi * sigma ** (j / m)
    vp = coeffs * v[..., None]  # CPU coeffs * CUDA v
    vp_cat = torch.cat((torch.cos(vp), torch.sin(vp)), dim=-1)
    return vp_cat.flatten(-2, -1)


class PositionalEncoding(nn.Module):
    """rff/layers.py in 0.1: only two Python numbers, nothing for .to() to move."""

    def __init__(self, sigma: float, m: int):
        super().__init__()
        self.sigma = sigma
        self.m = m

    def forward(self, v: Tensor) -> Tensor:
        return positional_encoding(v, self.sigma, self.m)


torch.manual_seed(0)
device = "cuda"
encoding = PositionalEncoding(sigma=10.0, m=4)
model = nn.Sequential(encoding, nn.Linear(2 * 4 * 2, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)

coords = torch.rand(8, 2, device=device)  # (x, y) coordinates of an image-regression task
output = model(coords)
print(output.sum())
