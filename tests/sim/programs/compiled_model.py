"""torch.compile on a model that builds a tensor in forward."""
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        scale = torch.ones(4, device=x.device) * 0.5  # bug: scale = torch.ones(4) * 0.5
        return self.fc(x) * scale


torch.manual_seed(0)
model = torch.compile(Scaled().cuda())
out = model(torch.arange(8.0).view(2, 4).cuda())
