"""LLMs-from-scratch, chapter 6 script after PR #173: move the model once, after the
classification head has been replaced.

Upstream: https://github.com/rasbt/LLMs-from-scratch/pull/173
"""

import torch
from torch import nn

torch.manual_seed(123)
device = torch.device("cuda")


class TinyGPT(nn.Module):
    """The shape of the book's GPTModel, shrunk: embedding, blocks, norm, output head."""

    def __init__(self, vocab_size=50, emb_dim=16):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, emb_dim)
        self.trf_blocks = nn.Sequential(nn.Linear(emb_dim, emb_dim), nn.GELU())
        self.final_norm = nn.LayerNorm(emb_dim)
        self.out_head = nn.Linear(emb_dim, vocab_size, bias=False)

    def forward(self, in_idx):
        x = self.tok_emb(in_idx)
        x = self.trf_blocks(x)
        x = self.final_norm(x)
        return self.out_head(x)


model = TinyGPT()

for param in model.parameters():
    param.requires_grad = False
num_classes = 2
model.out_head = nn.Linear(16, num_classes)
model.to(device)  # after the last structural change: every parameter moves

input_batch = torch.randint(0, 50, (4, 8)).to(device)
logits = model(input_batch)[:, -1, :]
print(logits)
