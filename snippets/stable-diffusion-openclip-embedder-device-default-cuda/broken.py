"""Stable Diffusion 2's FrozenOpenCLIPEmbedder (ldm/modules/encoders/modules.py), reduced: the
text encoder keeps a `device="cuda"` attribute from its constructor and sends the prompt's
tokens there, whatever GPU the model was moved to. Easy Diffusion loads the model on the
render device the user picked (`cuda:1`); `get_learned_conditioning` then looks the tokens
(on cuda:0) up in an embedding table on cuda:1.

Upstream: https://github.com/easydiffusion/easydiffusion/pull/561 (fixed by PR #591:
`thread_data.model.cond_stage_model.device = torch.device(thread_data.device)`)
"""

import torch
from torch import nn


def tokenize(texts, context_length=8):
    """open_clip.tokenize, reduced to a toy vocabulary: returns a CPU LongTensor."""
    result = torch.zeros(len(texts), context_length, dtype=torch.long)
    for i, text in enumerate(texts):
        ids = [1, *[2 + ord(ch) % 60 for ch in text][: context_length - 2], 63]
        result[i, : len(ids)] = torch.tensor(ids)
    return result


class TextTransformer(nn.Module):
    """The text tower of an open_clip model (the visual tower is deleted)."""

    def __init__(self, vocab_size=64, width=16, context_length=8):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, width)
        self.positional_embedding = nn.Parameter(torch.randn(context_length, width) * 0.01)
        self.ln_final = nn.LayerNorm(width)


class FrozenOpenCLIPEmbedder(nn.Module):
    def __init__(self, device="cuda", max_length=8):
        super().__init__()
        self.model = TextTransformer(context_length=max_length)
        self.device = device
        self.max_length = max_length

    def forward(self, text):
        tokens = tokenize(text)
        z = self.encode_with_transformer(tokens.to(self.device))
        return z

    def encode_with_transformer(self, text):
        x = self.model.token_embedding(text)  # [batch_size, n_ctx, d_model]
        x = x + self.model.positional_embedding
        x = self.model.ln_final(x)
        return x

    def encode(self, text):
        return self(text)


class LatentDiffusion(nn.Module):
    """ldm.models.diffusion.ddpm.LatentDiffusion: only the conditioning stage is kept."""

    def __init__(self):
        super().__init__()
        self.cond_stage_model = FrozenOpenCLIPEmbedder()  # cond_stage_config: no device given

    def get_learned_conditioning(self, c):
        return self.cond_stage_model.encode(c)


torch.manual_seed(0)
device = "cuda:1"  # thread_data.device: the render device chosen in Easy Diffusion's settings

# ui/sd_internal/runtime.py, load_model_ckpt_sd2():
model = LatentDiffusion()
model.to(device)
model.eval()

prompts = ["a photograph of an astronaut riding a horse"]
with torch.no_grad():
    c = model.get_learned_conditioning(prompts)
print(c.shape, c.device)
