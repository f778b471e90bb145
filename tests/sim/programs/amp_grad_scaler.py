"""Mixed precision as the PyTorch AMP recipe writes it: autocast + GradScaler."""
import torch
from torch import nn

device = torch.device("cuda")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cuda")
x = torch.randn(8, 16, device=device)  # bug: x = torch.randn(8, 16)
target = torch.randn(8, 4, device=device)
for _ in range(3):
    opt.zero_grad()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(model(x).float(), target)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
scale = scaler.get_scale()
