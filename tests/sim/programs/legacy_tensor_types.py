"""Old-style code: torch.cuda.FloatTensor and a conv fed the wrong type."""
import torch
from torch import nn

torch.manual_seed(0)
conv = nn.Conv2d(1, 2, 3).cuda()
img = torch.cuda.FloatTensor(1, 1, 5, 5).fill_(0.5)  # bug: img = torch.FloatTensor(1, 1, 5, 5).fill_(0.5)
out = conv(img)
labels = torch.cuda.LongTensor([1, 0])
is_float = isinstance(img, torch.cuda.FloatTensor)
