"""peft 0.3.0 AdaLoRA on a base model that is already on the GPU, reduced: each targeted
`nn.Linear` is replaced by a fresh `SVDLinear` (built on the CPU) that takes over the base
weight, and `LoraModel._replace_module()` then moves only the submodules whose name contains
"lora_". The `ranknum` ParameterDict stays on the CPU.

Upstream: https://github.com/huggingface/peft/issues/541 and #581 (fixed by PR #583, peft 0.4.0).
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


def transpose(weight, fan_in_fan_out):
    return weight.T if fan_in_fan_out else weight


class AdaLoraLayer:
    """peft/tuners/adalora.py (0.3.0), without the LoraLayer bookkeeping it inherits."""

    def __init__(self, in_features, out_features):
        self.r, self.lora_alpha, self.scaling = {}, {}, {}
        self.lora_dropout = nn.ModuleDict({})
        self.lora_E = nn.ParameterDict({})
        self.lora_A = nn.ParameterDict({})
        self.lora_B = nn.ParameterDict({})
        self.ranknum = nn.ParameterDict({})
        self.in_features, self.out_features = in_features, out_features

    def update_layer(self, adapter_name, r, lora_alpha, lora_dropout):
        self.r[adapter_name] = r
        self.lora_alpha[adapter_name] = lora_alpha
        self.lora_dropout.update(nn.ModuleDict({adapter_name: nn.Dropout(p=lora_dropout)}))
        self.lora_A.update(nn.ParameterDict({adapter_name: nn.Parameter(torch.zeros(r, self.in_features))}))
        self.lora_E.update(nn.ParameterDict({adapter_name: nn.Parameter(torch.zeros(r, 1))}))
        self.lora_B.update(nn.ParameterDict({adapter_name: nn.Parameter(torch.zeros(self.out_features, r))}))
        # The current rank
        self.ranknum.update(nn.ParameterDict({adapter_name: nn.Parameter(torch.zeros(1), requires_grad=False)}))
        self.ranknum[adapter_name].data.fill_(float(r))
        self.scaling[adapter_name] = lora_alpha if lora_alpha > 0 else float(r)
        nn.init.normal_(self.lora_A[adapter_name], mean=0.0, std=0.02)
        nn.init.normal_(self.lora_B[adapter_name], mean=0.0, std=0.02)
        self.to(self.weight.device)  # still the fresh CPU weight here: moves nothing


class SVDLinear(nn.Linear, AdaLoraLayer):
    def __init__(self, adapter_name, in_features, out_features, r=0, lora_alpha=1, lora_dropout=0.0, **kwargs):
        nn.Linear.__init__(self, in_features, out_features, **kwargs)  # a fresh CPU layer
        AdaLoraLayer.__init__(self, in_features=in_features, out_features=out_features)
        self.weight.requires_grad = False
        self.fan_in_fan_out = False
        self.update_layer(adapter_name, r, lora_alpha, lora_dropout)
        self.active_adapter = adapter_name

    def forward(self, x):
        result = F.linear(x, transpose(self.weight, self.fan_in_fan_out), bias=self.bias)
        result += (
            (
                self.lora_dropout[self.active_adapter](x)
                @ (self.lora_A[self.active_adapter] * self.lora_E[self.active_adapter]).T
                @ self.lora_B[self.active_adapter].T
            )
            * self.scaling[self.active_adapter]
            / (self.ranknum[self.active_adapter] + 1e-5)
        )
        return result


def _replace_module(parent_module, child_name, new_module, old_module):
    """LoraModel._replace_module (peft/tuners/lora.py, 0.3.0), which AdaLoraModel inherits."""
    setattr(parent_module, child_name, new_module)
    new_module.weight = old_module.weight
    if hasattr(old_module, "bias"):
        if old_module.bias is not None:
            new_module.bias = old_module.bias

    if getattr(old_module, "state", None) is not None:  # bitsandbytes 8-bit layers only
        new_module.state = old_module.state
        new_module.to(old_module.weight.device)

    # dispatch to correct device
    for name, module in new_module.named_modules():
        if "lora_" in name:
            module.to(old_module.weight.device)


class OPTAttention(nn.Module):
    """A stand-in for the base model: one attention block with OPT's projection names."""

    def __init__(self, embed_dim=16):
        super().__init__()
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, hidden_states):
        q, k, v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
        attn = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
        return self.out_proj(attn @ v)


torch.manual_seed(0)
device = "cuda"
model = OPTAttention().to(device)  # AutoModel.from_pretrained(..., device_map="auto")

# get_peft_model(model, AdaLoraConfig(init_r=12, lora_alpha=32, target_modules=["q_proj", "v_proj"]))
for target_name in ("q_proj", "v_proj"):  # AdaLoraModel._find_and_replace
    target = getattr(model, target_name)
    new_module = SVDLinear(
        "default", target.in_features, target.out_features, r=12, lora_alpha=32, lora_dropout=0.1,
        bias=target.bias is not None,
    )
    _replace_module(model, target_name, new_module, target)

hidden_states = torch.randn(2, 5, 16, device=device)
output = model(hidden_states)
loss = output.pow(2).mean()
loss.backward()
print(loss.item())
