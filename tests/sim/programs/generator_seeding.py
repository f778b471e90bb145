"""Reproducible sampling with a CUDA generator and the global CUDA seed."""
import torch

torch.cuda.manual_seed_all(0)
torch.manual_seed(0)
g = torch.Generator(device="cuda")
g.manual_seed(7)
drop = torch.rand(10, device="cuda", generator=g)  # bug: drop = torch.rand(10, device="cuda", generator=torch.Generator().manual_seed(7))
state = torch.cuda.get_rng_state()
noise = torch.randn(3, device="cuda")
torch.cuda.set_rng_state(state)
again = torch.randn(3, device="cuda")
