"""Causal self-attention with the mask built by hand (the classic CPU-mask bug)."""
import math

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        att = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        t = x.shape[1]
        mask = torch.triu(torch.ones(t, t, device=x.device), diagonal=1).bool()  # bug: mask = torch.triu(torch.ones(t, t), diagonal=1).bool()
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        return att @ v


torch.manual_seed(0)
block = CausalSelfAttention(8).cuda()
x = torch.randn(2, 5, 8).cuda()
y = block(x)
y.pow(2).mean().backward()
