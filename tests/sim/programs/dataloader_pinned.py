"""A DataLoader with workers and pinned memory feeding the GPU with non_blocking copies."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(24, 5), torch.randint(0, 2, (24,)))
loader = DataLoader(data, batch_size=8, num_workers=2, pin_memory=True)
model = nn.Linear(5, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
pinned = []
for xb, yb in loader:
    pinned.append(xb.is_pinned())
    xb = xb.cuda(non_blocking=True)
    yb = yb.cuda(non_blocking=True)  # bug: yb = yb
    opt.zero_grad()
    nn.functional.cross_entropy(model(xb), yb).backward()
    opt.step()
all_pinned = all(pinned) == torch.cuda.is_available()
