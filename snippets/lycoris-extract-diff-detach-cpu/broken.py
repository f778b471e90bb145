"""LyCORIS 2.1.0.dev7, `extract_diff` for a 3x3 convolution with CP decomposition: the
`.detach().cpu()` meant for the difference binds only to the einsum, by operator precedence.

Upstream: https://github.com/KohakuBlueleaf/LyCORIS/issues/146 (fixed in commit 49d4f1b).
"""

import torch
from torch import nn

torch.manual_seed(0)
extract_device = "cuda"  # tools/extract_locon.py --device cuda

base = nn.Conv2d(4, 8, kernel_size=3)  # a layer of the base model ...
tuned = nn.Conv2d(4, 8, kernel_size=3)  # ... and the same layer of the fine-tuned one

module, weights = base, tuned
root_weight = module.weight  # captured before the move; the Parameter object moves with it
module = module.to(extract_device)
weights = weights.to(extract_device)

# extract_conv(...) with CP decomposition: low-rank factors computed on the extract device
rank = 2
delta = root_weight - weights.weight
extract_c = torch.randn(rank, rank, 3, 3, device=extract_device)  # lora_mid
extract_a = torch.randn(rank, 4, 1, 1, device=extract_device)  # lora_down
extract_b = torch.randn(8, rank, 1, 1, device=extract_device)  # lora_up

diff = (
    root_weight
    - torch.einsum(
        "i j k l, j r, p i -> p r k l",
        extract_c,
        extract_a.flatten(1, -1),
        extract_b.flatten(1, -1),
    )
    .detach()
    .cpu()
    .contiguous()
)
print(diff.shape)
