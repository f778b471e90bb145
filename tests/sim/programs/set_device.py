"""Pinning work to GPUs with set_device and the torch.cuda.device context."""
import torch

torch.cuda.set_device(0)
a = torch.arange(6.0).cuda()
with torch.cuda.device(torch.cuda.current_device()):
    b = torch.ones(6).cuda()
total = a + b
c = torch.ones(6)
shifted = total * c.cuda()  # bug: shifted = total * c
