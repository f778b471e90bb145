"""timm 0.9.16, `ModelEmaV3`, reduced: with `--model-ema-force-cpu`, train.py keeps the EMA copy
on the CPU (`device='cpu'`). The constructor turns `foreach` off because the devices differ, but
the per-tensor update still does `ema_v.lerp_(model_v, ...)` with the model's CUDA tensors.

Upstream: https://github.com/huggingface/pytorch-image-models/issues/2127 (fixed by commit
24f6d4f "Fix #2127 move to ema device", released in 1.0.3).
"""

from copy import deepcopy

import torch
from torch import nn


class ModelEmaV3(nn.Module):
    """timm/utils/model_ema.py in 0.9.16, without the warm-up and the buffer-excluding path."""

    def __init__(self, model, decay: float = 0.9999, device: torch.device | None = None, foreach: bool = True):
        super().__init__()
        self.module = deepcopy(model)  # a copy of the model for the moving average
        self.module.eval()
        self.decay = decay
        self.foreach = foreach
        self.device = device  # perform ema on different device from model if set
        if self.device is not None and device != next(model.parameters()).device:
            self.foreach = False  # cannot use foreach methods with different devices
            self.module.to(device=device)

    @torch.no_grad()
    def update(self, model):
        for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values(), strict=True):
            if ema_v.is_floating_point():
                ema_v.lerp_(model_v, weight=1.0 - self.decay)  # CPU ema_v, CUDA model_v
            else:
                ema_v.copy_(model_v)


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
device = torch.device("cuda")  # train.py: --device cuda
model.to(device=device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
# train.py: "create EMA model after cuda()"; --model-ema-force-cpu passes device='cpu'
model_ema = ModelEmaV3(model, decay=0.9, device="cpu")

for step in range(3):  # train_one_epoch
    images, target = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    images, target = images.to(device), target.to(device)
    loss = nn.functional.cross_entropy(model(images), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model_ema.update(model)

ema_weight = model_ema.module[5].weight
print(ema_weight.detach().sum())
