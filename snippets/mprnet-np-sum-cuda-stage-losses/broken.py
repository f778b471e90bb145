"""MPRNet `Deblurring/train.py` (2021-03-01 to 2023-11-21), reduced: the multi-stage loss is
summed with `np.sum([criterion_char(restored[j], target) for j in range(len(restored))])`. The
stage losses are 0-dim CUDA tensors, and NumPy converts each one with `Tensor.__array__`, which
refuses tensors that are not on the CPU.

Upstream: https://github.com/swz30/MPRNet/issues/91 (answered by co-author Aditya Arora with
`sum([...])`), https://github.com/swz30/MPRNet/issues/128 (`torch.sum(torch.stack([...]))`).
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class CharbonnierLoss(nn.Module):
    """Charbonnier Loss (L1)"""

    def __init__(self, eps=1e-3):
        super().__init__()
        self.eps = eps

    def forward(self, x, y):
        diff = x - y
        return torch.mean(torch.sqrt((diff * diff) + (self.eps * self.eps)))


class EdgeLoss(nn.Module):
    def __init__(self):
        super().__init__()
        k = torch.Tensor([[.05, .25, .4, .25, .05]])
        self.kernel = torch.matmul(k.t(), k).unsqueeze(0).repeat(3, 1, 1, 1)
        if torch.cuda.is_available():
            self.kernel = self.kernel.cuda()
        self.loss = CharbonnierLoss()

    def conv_gauss(self, img):
        n_channels, _, kw, kh = self.kernel.shape
        img = F.pad(img, (kw // 2, kh // 2, kw // 2, kh // 2), mode='replicate')
        return F.conv2d(img, self.kernel, groups=n_channels)

    def laplacian_kernel(self, current):
        filtered = self.conv_gauss(current)
        down = filtered[:, :, ::2, ::2]
        new_filter = torch.zeros_like(filtered)
        new_filter[:, :, ::2, ::2] = down * 4
        filtered = self.conv_gauss(new_filter)
        return current - filtered

    def forward(self, x, y):
        return self.loss(self.laplacian_kernel(x), self.laplacian_kernel(y))


class MPRNet(nn.Module):
    """A stand-in for MPRNet: three stages, each returning a restored image (stage 3 first)."""

    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList(nn.Conv2d(3, 3, 3, padding=1) for _ in range(3))

    def forward(self, x):
        outs, h = [], x
        for stage in self.stages:
            h = x + stage(h)
            outs.append(h)
        return outs[::-1]


torch.manual_seed(0)
model_restoration = MPRNet()
model_restoration.cuda()
optimizer = torch.optim.Adam(model_restoration.parameters(), lr=2e-4)
criterion_char = CharbonnierLoss()
criterion_edge = EdgeLoss()

data = (torch.rand(2, 3, 16, 16), torch.rand(2, 3, 16, 16))  # one batch of train_loader
for param in model_restoration.parameters():
    param.grad = None

target = data[0].cuda()
input_ = data[1].cuda()

restored = model_restoration(input_)

# Compute loss at each stage
loss_char = np.sum([criterion_char(restored[j], target) for j in range(len(restored))])
loss_edge = np.sum([criterion_edge(restored[j], target) for j in range(len(restored))])
loss = (loss_char) + (0.05 * loss_edge)

loss.backward()
optimizer.step()
print(f"loss {loss.item():.4f}")
