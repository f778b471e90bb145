"""A pre-norm attention block trained under bf16 autocast, as nanoGPT trains: layer_norm,
softmax, cross_entropy and the reductions are float32 under CUDA's autocast (4-byte), matmuls bfloat16
(2-byte): the CPU reference run must cast the same way to compute the same numbers."""
import torch
from torch import nn
from torch.nn import functional as F

device = "cuda"
torch.manual_seed(0)
d, t, vocab = 16, 8, 11
emb = nn.Embedding(vocab, d).to(device)
ln = nn.LayerNorm(d).to(device)
qkv = nn.Linear(d, 3 * d).to(device)
head = nn.Linear(d, vocab).to(device)
params = [*emb.parameters(), *ln.parameters(), *qkv.parameters(), *head.parameters()]
opt = torch.optim.AdamW(params, lr=1e-2)
idx = torch.randint(0, vocab, (4, t), device=device)
targets = torch.randint(0, vocab, (4, t), device=device)  # bug: targets = torch.randint(0, vocab, (4, t))
mask = torch.tril(torch.ones(t, t, device=device)).bool()
for _ in range(3):
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        x = emb(idx)
        q, k, v = qkv(ln(x)).split(d, dim=-1)
        att = (q @ k.transpose(-2, -1)) / d ** 0.5
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        x = x + att @ v
        logits = head(x)
        loss = F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
        itemsizes = [att.dtype.itemsize, logits.dtype.itemsize, loss.dtype.itemsize, ln(x).dtype.itemsize]
    opt.zero_grad()
    loss.backward()
    opt.step()
final_loss = loss.detach().float()
