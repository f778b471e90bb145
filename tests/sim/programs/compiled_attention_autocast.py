"""nanoGPT's default configuration in miniature: a causal self-attention layer through
``F.scaled_dot_product_attention``, compiled with ``torch.compile``, trained under bf16 autocast."""
import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))


device = "cuda"
torch.manual_seed(0)
model = CausalSelfAttention(16, 2).to(device)
compiled = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
x = torch.randn(2, 8, 16, device=device)
target = torch.randn(2, 8, 16, device=device)  # bug: target = torch.randn(2, 8, 16)
for _ in range(2):
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        out = compiled(x)
        loss = F.mse_loss(out.float(), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
