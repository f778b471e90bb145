"""nanoGPT `train.py`, reduced: the default configuration says `device = 'cuda'`, and a user on
a machine whose PyTorch has no CUDA (a CPU-only wheel, a macOS build, Debian's `python3-torch`)
runs `python train.py` as is. `model.to(device)` asks the CUDA runtime to initialise and the
CPU-only build refuses.

Upstream: https://github.com/karpathy/nanoGPT/issues/281 (fixed by the reporter with
`device = 'cpu'`), https://github.com/karpathy/nanoGPT/issues/460 (the same traceback from
`model.to(device)` at train.py line 193).
"""

from contextlib import nullcontext

import torch
from torch import nn
from torch.nn import functional as F

# -----------------------------------------------------------------------------
# default config values (train.py), shrunk
batch_size = 4
block_size = 8
vocab_size = 65
n_embd = 16
learning_rate = 6e-4
# system
device = 'cuda'  # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1' etc., or try 'mps' on macbooks
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'
compile = False
# -----------------------------------------------------------------------------

torch.manual_seed(1337)
device_type = 'cuda' if 'cuda' in device else 'cpu'  # for later use in torch.autocast
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)


class GPT(nn.Module):
    """A stand-in for model.py's GPT: token and position embeddings, a tied head."""

    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.ln_f(self.wte(idx) + self.wpe(pos))
        logits = self.lm_head(x)
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


data = torch.randint(vocab_size, (1000,))  # np.memmap('train.bin')


def get_batch():
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])
    if device_type == 'cuda':
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    else:
        x, y = x.to(device), y.to(device)
    return x, y


model = GPT()
model.to(device)  # train.py line 193: the first thing that touches CUDA
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)

X, Y = get_batch()
with ctx:
    logits, loss = model(X, Y)
loss.backward()
optimizer.step()
print(f"iter 0: loss {loss.item():.4f}")
