"""random-fourier-features-pytorch 0.2, `rff.functional.positional_encoding`, reduced: the
frequency indices are created on the input's device, `torch.arange(m, device=v.device)`.

Upstream: https://github.com/jmclong/random-fourier-features-pytorch/pull/4 (commit 26869df).
In the library the function is `@torch.jit.script`-compiled and uses `np.pi`; here it is plain
Python with `math.pi`.
"""

import math

import torch
from torch import Tensor, nn


def positional_encoding(v: Tensor, sigma: float, m: int) -> Tensor:
    """rff/functional.py in 0.2."""
    j = torch.arange(m, device=v.device)  # follows the input
    coeffs = 2 * math.pi * sigma ** (j / m)
    vp = coeffs * torch.unsqueeze(v, -1)
    vp_cat = torch.cat((torch.cos(vp), torch.sin(vp)), dim=-1)
    return vp_cat.flatten(-2, -1)


class PositionalEncoding(nn.Module):
    """rff/layers.py: only two Python numbers, nothing for .to() to move."""

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
