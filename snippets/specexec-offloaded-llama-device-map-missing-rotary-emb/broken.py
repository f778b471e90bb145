"""SpecExec's offloaded Llama, reduced: `load_offloaded_model` loads the model with a hand-written
`device_map` (embeddings, norm and head on `cuda:0`, the decoder layers on "meta", streamed
from CPU storage by its offloading cache). transformers had moved the rotary embedding from the
attention layers to the model, `LlamaModel.rotary_emb`; the map does not name it, so it gets no
device and no hook, and its `inv_freq` buffer stays on the CPU while the positions are on the
GPU. accelerate's dispatch is reduced to what it does here: each mapped module goes to its
device and a forward pre-hook moves its inputs there (AlignDevicesHook).

Upstream: https://github.com/yandex-research/specexec/issues/1, fixed by commit e396a69
("model.rotary_emb map to cuda:0").
"""

from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


# ---- transformers/models/llama/modeling_llama.py, shrunk ---------------------------------------
class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        dim = config.hidden_size // config.num_attention_heads
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class LlamaAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, hidden_states, position_embeddings):
        bsz, q_len, _ = hidden_states.shape
        shape = (bsz, q_len, self.num_heads, self.head_dim)
        query_states = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        attn_output = F.scaled_dot_product_attention(query_states, key_states, value_states, is_causal=True)
        return self.o_proj(attn_output.transpose(1, 2).reshape(bsz, q_len, -1))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = LlamaAttention(config)
        self.mlp = nn.Sequential(nn.Linear(config.hidden_size, 32), nn.SiLU(), nn.Linear(32, config.hidden_size))
        self.input_layernorm = nn.LayerNorm(config.hidden_size)
        self.post_attention_layernorm = nn.LayerNorm(config.hidden_size)

    def forward(self, hidden_states, position_embeddings):
        hidden_states = hidden_states + self.self_attn(self.input_layernorm(hidden_states), position_embeddings)
        return hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))


class LlamaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(LlamaDecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.norm = nn.LayerNorm(config.hidden_size)
        self.rotary_emb = LlamaRotaryEmbedding(config)  # shared by all layers, no longer inside each one

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        cache_position = torch.arange(0, inputs_embeds.shape[1], device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0)
        hidden_states = inputs_embeds
        # create position embeddings to be shared across the decoder layers
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, position_embeddings=position_embeddings)
        return self.norm(hidden_states)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids):
        return self.lm_head(self.model(input_ids))


# ---- accelerate's dispatch_model, reduced --------------------------------------------------------
def dispatch_model(model, device_map):
    for name, device in device_map.items():
        if device == "meta":
            continue  # left for the offloading cache to fill
        module = model.get_submodule(name)
        module.to(device)
        module.register_forward_pre_hook(
            lambda m, args, kwargs, device=device: (
                tuple(a.to(device) if torch.is_tensor(a) else a for a in args),
                {k: v.to(device) if torch.is_tensor(v) else v for k, v in kwargs.items()},
            ),
            with_kwargs=True,
        )
    return model


# ---- specexec/offloading, reduced ----------------------------------------------------------------
class OffloadedLayerIter(nn.Module):
    """The layers' weights wait in CPU storage; one device buffer on the GPU is refilled for each
    layer in turn (OffoadingCache.load_modules)."""

    def __init__(self, cpu_layers, main_device):
        super().__init__()
        self.offloaded_storages = [{k: v.cpu() for k, v in layer.state_dict().items()} for layer in cpu_layers]
        self.device_buffer = [cpu_layers[0].to(main_device)]  # a plain list: this module owns the cache

    def __iter__(self):
        module = self.device_buffer[0]
        for storage in self.offloaded_storages:
            module.load_state_dict(storage)  # copy_ from CPU storage into the GPU buffer
            yield module


def load_offloaded_model(config, main_device="cuda:0"):
    device_map = {
        "model.embed_tokens": "cuda:0",
        "model.layers": "meta",
        "model.norm": "cuda:0",
        "lm_head": "cuda:0",
    }
    model = LlamaForCausalLM(config)  # AutoModelForCausalLM.from_pretrained(model_name, device_map=device_map, ...)
    model = dispatch_model(model, device_map)
    model.model.layers = OffloadedLayerIter(list(model.model.layers), main_device)
    return model


config = SimpleNamespace(vocab_size=100, hidden_size=16, num_attention_heads=2, num_hidden_layers=3, rope_theta=10000.0)
model = load_offloaded_model(config)
input_ids = torch.randint(0, config.vocab_size, (1, 7)).to("cuda:0")
with torch.no_grad():
    logits = model(input_ids)
next_token = logits[:, -1].argmax(-1)
print("next token:", next_token.item(), "| logits:", [round(x, 4) for x in logits[0, -1, :4].tolist()])
