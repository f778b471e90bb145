"""SDPA on the simulated device runs the kernel the CPU picks, so training equals the CPU run.

Before, a PrivateUse1 input always took ATen's math path while the CPU took its flash kernel;
the outputs differed by ~1e-7 and AdamW amplified that over steps.
"""

from __future__ import annotations

import torch
from torch import nn


class TinyViT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.pos = nn.Parameter(torch.randn(1, 4, 16) * 0.02)
        self.block = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        tokens = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.block(tokens).mean(1))


def _train(device: torch.device) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = TinyViT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = torch.randn(4, 3, 8, 8).to(device)
    y = torch.tensor([0, 1, 2, 1]).to(device)
    for _ in range(8):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return [p.detach().to("cpu") for p in model.parameters()]


def test_tiny_vit_trained_with_adamw_equals_the_cpu_run_exactly(simdev):
    for got, want in zip(_train(simdev), _train(torch.device("cpu")), strict=True):
        assert torch.equal(got, want)


def test_sdpa_forward_and_backward_equal_the_cpu_bit_for_bit(simdev):
    f = nn.functional.scaled_dot_product_attention
    g = torch.Generator().manual_seed(1)
    for mask in (None, torch.rand(5, 5, generator=g) > 0.3, torch.randn(5, 5, generator=g)):
        q, k, v = (torch.randn(2, 3, 5, 8, generator=g, requires_grad=True) for _ in range(3))
        want = f(q, k, v, attn_mask=mask)
        want.sum().backward()
        qs, ks, vs = (t.detach().to(simdev).requires_grad_() for t in (q, k, v))
        got = f(qs, ks, vs, attn_mask=None if mask is None else mask.to(simdev))
        got.sum().backward()
        assert torch.equal(got.cpu(), want)
        for a, b in ((qs, q), (ks, k), (vs, v)):
            assert torch.equal(a.grad.cpu(), b.grad)
