"""Peak memory around a forward pass, the way training scripts log it."""
import torch
from torch import nn

torch.manual_seed(0)
torch.cuda.reset_peak_memory_stats()
_before = torch.cuda.memory_allocated()
emb = nn.Embedding(100, 16).cuda()
ids = torch.tensor([[1, 5, 7], [2, 3, 99]]).cuda()  # bug: ids = torch.tensor([[1, 5, 7], [2, 3, 99]])
pooled = emb.weight.index_select(0, ids.flatten()).view(2, 3, 16).mean(1)
_peak = torch.cuda.max_memory_allocated()
used_more = _peak > _before  # True on the GPU; the CPU run has no GPU memory to count
_free, _total = torch.cuda.mem_get_info()
torch.cuda.empty_cache()
