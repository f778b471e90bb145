"""LyCORIS 2.1.0.dev8 / 2.1.0: the subtraction is parenthesised, then the whole difference
is detached and moved to the CPU.

Upstream: https://github.com/KohakuBlueleaf/LyCORIS/commit/49d4f1be78ee299a8ce898517c932dcbe77c3da2
"""

import torch
from torch import nn

torch.manual_seed(0)
extract_device = "cuda"

base = nn.Conv2d(4, 8, kernel_size=3)
tuned = nn.Conv2d(4, 8, kernel_size=3)

module, weights = base, tuned
root_weight = module.weight
module = module.to(extract_device)
weights = weights.to(extract_device)

rank = 2
delta = root_weight - weights.weight
extract_c = torch.randn(rank, rank, 3, 3, device=extract_device)
extract_a = torch.randn(rank, 4, 1, 1, device=extract_device)
extract_b = torch.randn(8, rank, 1, 1, device=extract_device)

diff = (
    (
        root_weight
        - torch.einsum(
            "i j k l, j r, p i -> p r k l",
            extract_c,
            extract_a.flatten(1, -1),
            extract_b.flatten(1, -1),
        )
    )
    .detach()
    .cpu()
    .contiguous()
)
print(diff.shape)
