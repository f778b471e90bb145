"""DataParallel behind the usual device-count check."""
import torch
from torch import nn


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        g = torch.Generator(device=x.device).manual_seed(1)
        noise = torch.rand(x.shape[0], 4, generator=g, device=x.device)  # bug: noise = torch.rand(x.shape[0], 4)
        return self.fc(x) + 0 * noise


torch.manual_seed(0)
model = Noisy()
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model)
model = model.cuda()
x = torch.randn(8, 6).cuda()
out = model(x)
out.sum().backward()
grads = [p.grad for p in model.parameters()]
