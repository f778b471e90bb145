"""Save a checkpoint, load it back with map_location, keep training."""
import os
import tempfile

import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Linear(4, 4).to(device)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(5, 4, device=device)
model(x).sum().backward()
opt.step()
path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "scale": torch.full((4,), 2.0, device=device)}, path)
ckpt = torch.load(path, map_location=device)  # bug: ckpt = torch.load(path, map_location="cpu")
model2 = nn.Linear(4, 4).to(device)
model2.load_state_dict(ckpt["model"])
opt2 = torch.optim.Adam(model2.parameters(), lr=0.01)
opt2.load_state_dict(ckpt["opt"])
out = model2(x) * ckpt["scale"]
out.sum().backward()
opt2.step()
