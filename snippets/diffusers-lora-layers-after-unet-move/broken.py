"""diffusers examples/text_to_image/train_text_to_image_lora.py between PR #5809 (2023-11-21)
and PR #5388 (2023-12-07), reduced: the UNet is moved to the GPU first, then new
`LoRALinearLayer`s are attached to its attention projections. They are created on the CPU, and
`accelerator.prepare()` only receives a *list* of their parameters, which it returns unchanged.

Upstream: https://github.com/huggingface/diffusers/issues/5897 (fixed by PR #5388).
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
        down_hidden_states = self.down(hidden_states.to(dtype))  # dtype aligned, device not
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


torch.manual_seed(0)
device = "cuda"  # accelerator.device
weight_dtype = torch.float32  # --mixed_precision no (fp16 fails the same way)
rank = 4

unet = TinyUNet()
unet.requires_grad_(False)
unet.to(device, dtype=weight_dtype)  # line 475 of the script

# Set correct lora layers
unet_lora_parameters = []
for attn_module in (unet.attn1, unet.attn2):  # for attn_processor_name in unet.attn_processors
    for proj in (attn_module.to_q, attn_module.to_k, attn_module.to_v, attn_module.to_out[0]):
        proj.set_lora_layer(
            LoRALinearLayer(in_features=proj.in_features, out_features=proj.out_features, rank=rank)
        )  # new nn.Linear weights: created on the CPU
        unet_lora_parameters.extend(proj.lora_layer.parameters())

optimizer = torch.optim.AdamW(unet_lora_parameters, lr=1e-4)
# unet_lora_parameters, optimizer, ... = accelerator.prepare(unet_lora_parameters, optimizer, ...):
# prepare() moves nn.Modules; a list of parameters comes back as it went in

noisy_latents = torch.randn(2, 8, 16, device=device)  # (batch, tokens, channels)
target = torch.randn(2, 8, 16, device=device)
model_pred = unet(noisy_latents)
loss = F.mse_loss(model_pred.float(), target.float(), reduction="mean")
loss.backward()
optimizer.step()
print(loss.item())
