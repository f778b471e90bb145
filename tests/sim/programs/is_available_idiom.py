"""The most common idiom: pick "cuda" when it is there, train a small classifier."""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 8).to(device)
y = torch.randint(0, 3, (32,)).to(device)  # bug: y = torch.randint(0, 3, (32,))
for _ in range(5):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
