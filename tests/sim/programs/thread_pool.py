"""Preprocessing in a thread pool that moves each tensor to the GPU."""
from concurrent.futures import ThreadPoolExecutor

import torch

torch.manual_seed(0)
chunks = [torch.randn(4, 3) for _ in range(6)]
offset = torch.linspace(0, 1, 3)


def prepare(chunk):
    return chunk.cuda() + offset.cuda()  # bug: return chunk.cuda() + offset


with ThreadPoolExecutor(max_workers=3) as pool:
    prepared = list(pool.map(prepare, chunks))
stacked = torch.stack(prepared).sum(0)
