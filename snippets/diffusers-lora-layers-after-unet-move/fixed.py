"""diffusers examples/text_to_image/train_text_to_image_lora.py after PR #5388 (2023-12-07),
reduced: `unet.add_adapter(unet_lora_config)` creates each LoRA layer next to the weight of the
layer it adapts, already on the GPU, and `accelerator.prepare()` gets the UNet itself.

Upstream: https://github.com/huggingface/diffusers/pull/5388 (fixes issue #5897).
"""

import torch
import torch.nn.functional as F
from torch import nn


class LoRALinearLayer(nn.Module):
    """diffusers/models/lora.py (v0.24.0), without network_alpha."""

    def __init__(self, in_features, out_features, rank=4, device=None, dtype=None):
        super().__init__()
        self.down = nn.Linear(in_features, rank, bias=False, device=device, dtype=dtype)
        self.up = nn.Linear(rank, out_features, bias=False, device=device, dtype=dtype)
        nn.init.normal_(self.down.weight, std=1 / rank)
        nn.init.zeros_(self.up.weight)

    def forward(self, hidden_states):
        orig_dtype = hidden_states.dtype
        dtype = self.down.weight.dtype
        down_hidden_states = self.down(hidden_states.to(dtype))
        up_hidden_states = self.up(down_hidden_states)
        return up_hidden_states.to(orig_dtype)


class LoRACompatibleLinear(nn.Linear):
    def __init__(self, *args, lora_layer=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lora_layer = lora_layer

    def set_lora_layer(self, lora_layer):
        self.lora_layer = lora_layer

    def forward(self, hidden_states, scale=1.0):
        if self.lora_layer is None:
            return super().forward(hidden_states)
        return super().forward(hidden_states) + (scale * self.lora_layer(hidden_states))


class Attention(nn.Module):
    """The projections of diffusers' Attention, with plain scaled dot-product attention."""

    def __init__(self, dim):
        super().__init__()
        self.to_q = LoRACompatibleLinear(dim, dim)
        self.to_k = LoRACompatibleLinear(dim, dim)
        self.to_v = LoRACompatibleLinear(dim, dim)
        self.to_out = nn.ModuleList([LoRACompatibleLinear(dim, dim), nn.Dropout(0.0)])

    def forward(self, hidden_states):
        q, k, v = self.to_q(hidden_states), self.to_k(hidden_states), self.to_v(hidden_states)
        hidden_states = F.scaled_dot_product_attention(q, k, v)
        return self.to_out[1](self.to_out[0](hidden_states))


class TinyUNet(nn.Module):
    """Stands in for UNet2DConditionModel: two transformer blocks' self-attention."""

    def __init__(self, dim=16):
        super().__init__()
        self.attn1 = Attention(dim)
        self.attn2 = Attention(dim)

    def forward(self, sample):
        sample = sample + self.attn1(sample)
        return sample + self.attn2(sample)


def add_adapter(unet, rank):
    """What `unet.add_adapter(LoraConfig(...))` does here: each new LoRA layer is created on
    the device (and dtype) of the weight it adapts."""
    for attn_module in (unet.attn1, unet.attn2):
        for proj in (attn_module.to_q, attn_module.to_k, attn_module.to_v, attn_module.to_out[0]):
            proj.set_lora_layer(
                LoRALinearLayer(
                    proj.in_features, proj.out_features, rank=rank,
                    device=proj.weight.device, dtype=proj.weight.dtype,
                )
            )


torch.manual_seed(0)
device = "cuda"  # accelerator.device
weight_dtype = torch.float32
rank = 4

unet = TinyUNet()
unet.requires_grad_(False)
unet.to(device, dtype=weight_dtype)

add_adapter(unet, rank)  # unet.add_adapter(unet_lora_config)
lora_layers = filter(lambda p: p.requires_grad, unet.parameters())

optimizer = torch.optim.AdamW(lora_layers, lr=1e-4)
# unet, optimizer, ... = accelerator.prepare(unet, optimizer, ...): the module itself

noisy_latents = torch.randn(2, 8, 16, device=device)
target = torch.randn(2, 8, 16, device=device)
model_pred = unet(noisy_latents)
loss = F.mse_loss(model_pred.float(), target.float(), reduction="mean")
loss.backward()
optimizer.step()
print(loss.item())
