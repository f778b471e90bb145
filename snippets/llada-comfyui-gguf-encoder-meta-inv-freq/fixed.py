"""LLaDA-Image ComfyUI node (llada_gguf_adapter.py), reduced: `load_llada2_gguf_encoder` builds
the text encoder under `accelerate.init_empty_weights(include_buffers=True)`, which is
`with torch.device("meta")`: every parameter *and buffer* starts on the meta device. The GGUF
file supplies every weight but not the rotary embedding's non-persistent `inv_freq` buffer.
Fixed as proposed in the issue: after the GGUF tensors are bound, every buffer still on meta
is materialized (`inv_freq` recomputed with the module's `rope_init_fn`).

Upstream: https://github.com/RealRebelAI/LLaDa-Image_ComfyUI/issues/3
"""

from contextlib import contextmanager

import torch
from torch import nn


@contextmanager
def init_empty_weights(include_buffers=False):
    """accelerate.init_empty_weights -> init_on_device(torch.device("meta"), include_buffers)."""
    if include_buffers:
        with torch.device("meta"):
            yield
        return
    raise NotImplementedError("this reduction only needs include_buffers=True")


class LLaDA2MoeConfig:
    hidden_size, num_attention_heads, vocab_size, rope_theta = 32, 4, 64, 10000.0


def _compute_default_rope_parameters(config, device=None):
    """transformers' ROPE_INIT_FUNCTIONS["default"]."""
    dim = config.hidden_size // config.num_attention_heads
    inv_freq = 1.0 / (config.rope_theta ** (
        torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
    return inv_freq, 1.0


ROPE_INIT_FUNCTIONS = {"default": _compute_default_rope_parameters}


class LLaDA2MoeRotaryEmbedding(nn.Module):
    def __init__(self, config, device=None):
        super().__init__()
        self.config = config
        self.rope_init_fn = ROPE_INIT_FUNCTIONS["default"]
        inv_freq, self.attention_scaling = self.rope_init_fn(self.config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # not in any checkpoint

    def forward(self, x, position_ids):
        freqs = position_ids[:, :, None].float() * self.inv_freq.to(x.device)[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos() * self.attention_scaling, emb.sin() * self.attention_scaling


class LLaDA2MoeModelLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.rotary_emb = LLaDA2MoeRotaryEmbedding(config)
        self.norm = nn.LayerNorm(config.hidden_size)

    def forward(self, input_ids):
        hidden = self.embed_tokens(input_ids)
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
        cos, sin = self.rotary_emb(hidden, positions)
        heads = hidden.shape[-1] // cos.shape[-1]
        return self.norm(hidden * cos.repeat(1, 1, heads) + hidden * sin.repeat(1, 1, heads))


def _resolve_parent(model, key):
    *path, leaf = key.split(".")
    parent = model
    for name in path:
        parent = getattr(parent, name)
    return parent, leaf


def load_llada2_gguf_encoder(sd, dtype=torch.float32):
    """Instantiate LLaDA2 on meta and bind the GGUF tensors to it."""
    config = LLaDA2MoeConfig()
    with init_empty_weights(include_buffers=True):
        model = LLaDA2MoeModelLM(config)

    # Load all remaining tensors.
    for key, tensor in sd.items():
        parent, leaf = _resolve_parent(model, key)
        value = tensor.to(device="cpu", dtype=dtype)
        delattr(parent, leaf)  # _drop_registered_attr(parent, leaf)
        parent.register_parameter(leaf, nn.Parameter(value, requires_grad=False))

    # The fix from the issue: materialize any buffer still on meta before model.eval();
    # recompute inv_freq with the module's own rope init function.
    for _m in model.modules():
        for _name, _buf in list(_m.named_buffers(recurse=False)):
            if _buf is None or not _buf.is_meta:
                continue
            if _name == "inv_freq" and hasattr(_m, "rope_init_fn") and hasattr(_m, "config"):
                inv_freq, _ = _m.rope_init_fn(_m.config, device="cpu")
                _m.register_buffer(_name, inv_freq, persistent=False)
            else:
                raise RuntimeError(f"buffer {_name} is still on the meta device")

    model.eval()
    model.requires_grad_(False)
    return model


torch.manual_seed(0)
# The GGUF file's tensors: every weight of the encoder, and no inv_freq (it is never saved).
sd = {k: v for k, v in LLaDA2MoeModelLM(LLaDA2MoeConfig()).state_dict().items()}

model = load_llada2_gguf_encoder(sd)
model.to("cuda")  # the text encoder is moved to the GPU for encoding
input_ids = torch.tensor([[1, 5, 7, 2]], device="cuda")
hidden = model(input_ids)
print(hidden.shape, hidden[0, :, 0])
