"""External-Attention-pytorch `model/mlp/mlp_mixer.py`, reduced: `MlpMixer` keeps its mixer
blocks in a plain Python list, so `model.to("cuda")` never sees them and their weights stay on
the CPU.

Upstream: https://github.com/xmu-xiaoma666/External-Attention-pytorch/issues/94 (open), whose
reporter points at this file's `self.mlp_blocks=[]`. The sizes here are smaller than in the
file's own example.
"""

import torch
from torch import nn


class MlpBlock(nn.Module):
    def __init__(self, input_dim, mlp_dim=512):
        super().__init__()
        self.fc1 = nn.Linear(input_dim, mlp_dim)
        self.gelu = nn.GELU()
        self.fc2 = nn.Linear(mlp_dim, input_dim)

    def forward(self, x):
        return self.fc2(self.gelu(self.fc1(x)))


class MixerBlock(nn.Module):
    def __init__(self, tokens_mlp_dim, channels_mlp_dim, tokens_hidden_dim, channels_hidden_dim):
        super().__init__()
        self.ln = nn.LayerNorm(channels_mlp_dim)
        self.tokens_mlp_block = MlpBlock(tokens_mlp_dim, mlp_dim=tokens_hidden_dim)
        self.channels_mlp_block = MlpBlock(channels_mlp_dim, mlp_dim=channels_hidden_dim)

    def forward(self, x):
        y = self.ln(x)
        y = y.transpose(1, 2)
        y = self.tokens_mlp_block(y)
        y = y.transpose(1, 2)
        out = x + y
        y = self.ln(out)
        return out + self.channels_mlp_block(y)


class MlpMixer(nn.Module):
    def __init__(self, num_classes, num_blocks, patch_size, tokens_hidden_dim,
                 channels_hidden_dim, tokens_mlp_dim, channels_mlp_dim):
        super().__init__()
        self.num_blocks = num_blocks
        self.tokens_mlp_dim = tokens_mlp_dim
        self.embd = nn.Conv2d(3, channels_mlp_dim, kernel_size=patch_size, stride=patch_size)
        self.ln = nn.LayerNorm(channels_mlp_dim)
        self.mlp_blocks = []  # a plain list: invisible to .to(), .parameters(), state_dict()
        for _ in range(num_blocks):
            self.mlp_blocks.append(MixerBlock(tokens_mlp_dim, channels_mlp_dim,
                                              tokens_hidden_dim, channels_hidden_dim))
        self.fc = nn.Linear(channels_mlp_dim, num_classes)

    def forward(self, x):
        y = self.embd(x)
        bs, c, h, w = y.shape
        y = y.view(bs, c, -1).transpose(1, 2)
        for i in range(self.num_blocks):
            y = self.mlp_blocks[i](y)
        y = self.ln(y)
        y = torch.mean(y, dim=1, keepdim=False)
        return self.fc(y)


torch.manual_seed(0)
device = "cuda"
model = MlpMixer(num_classes=10, num_blocks=2, patch_size=4, tokens_hidden_dim=32,
                 channels_hidden_dim=64, tokens_mlp_dim=16, channels_mlp_dim=32).to(device)
print("parameters the optimizer would see:", sum(p.numel() for p in model.parameters()))

images = torch.randn(2, 3, 16, 16, device=device)
logits = model(images)
print(logits.sum())
