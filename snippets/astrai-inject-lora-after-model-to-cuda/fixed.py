"""AstrAI LoRA fine-tuning with the fix of PR #19 (commit a5678c9, released in v1.3.11),
reduced: `LoRALinear` creates `lora_A` / `lora_B` on the device and dtype of the base weight it
wraps, so `inject_lora()` after `m.to(device=device)` leaves no part of the model on the CPU.

Upstream: https://github.com/ViperEkura/AstrAI/pull/19
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

TARGET_MODULES_ATTN = {"q_proj", "k_proj", "v_proj", "o_proj"}


class Linear(nn.Module):
    """astrai/model/components/linear.py"""

    def __init__(self, in_dim, out_dim, bias=False, init_std=0.02):
        super().__init__()
        self.weight = nn.Parameter(torch.empty((out_dim, in_dim)).normal_(0.0, init_std))
        self.bias = nn.Parameter(torch.zeros(out_dim)) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class LoRALinear(nn.Module):
    """astrai/model/components/lora.py after the fix."""

    def __init__(self, base, r=16, alpha=32):
        super().__init__()
        self.register_parameter("weight", base.weight)
        self.weight.requires_grad_(False)
        self.bias = base.bias
        self.r = r
        self.scaling = alpha / r
        device = self.weight.device
        dtype = self.weight.dtype
        self.lora_A = nn.Parameter(torch.randn(r, self.weight.shape[1], device=device, dtype=dtype) / r)
        self.lora_B = nn.Parameter(torch.zeros(self.weight.shape[0], r, device=device, dtype=dtype))

    def forward(self, x):
        out = F.linear(x, self.weight, self.bias)
        out += (F.linear(x, self.lora_A) @ self.lora_B.T) * self.scaling
        return out


def inject_lora(model, r=16, alpha=32, target_modules=None):
    if target_modules is None:
        target_modules = TARGET_MODULES_ATTN
    for name, module in list(model.named_modules()):
        if not isinstance(module, Linear):
            continue
        parent_name, _, child_name = name.rpartition(".")
        if child_name not in target_modules:
            continue
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child_name, LoRALinear(module, r=r, alpha=alpha))


class Attention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.q_proj, self.k_proj = Linear(dim, dim), Linear(dim, dim)
        self.v_proj, self.o_proj = Linear(dim, dim), Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (p(x).view(b, t, self.n_heads, -1).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, d))


class AutoRegressiveLM(nn.Module):
    """astrai.model.AutoRegressiveLM, shrunk to one attention block."""

    def __init__(self, vocab_size=100, dim=32, n_heads=4):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.attn = Attention(dim, n_heads)
        self.lm_head = Linear(dim, vocab_size)

    def forward(self, input_ids):
        h = self.embed(input_ids)
        h = h + self.attn(h)
        return self.lm_head(h)


torch.manual_seed(0)
device = torch.device("cuda")  # astrai.parallel.setup.get_current_device()


def _before_wrap(m):  # TrainContextBuilder.build()
    m = m.to(device=device)
    inject_lora(m, r=4, alpha=8, target_modules={"q_proj", "v_proj"})
    return m


model = _before_wrap(AutoRegressiveLM())
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)

input_ids = torch.randint(0, 100, (2, 8), device=device)
logits = model(input_ids[:, :-1])
loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), input_ids[:, 1:].reshape(-1))
loss.backward()
optimizer.step()
print(f"loss {loss.item():.4f}")
