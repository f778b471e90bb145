"""pytorch/pytorch#159133: a model moved to the GPU is wrapped in `torch.compile` and called
with an input left on the CPU. Dynamo traces `forward` with fake tensors before any kernel runs,
so the mismatch surfaces at compile time, as a graph break ("Tensor device mismatch", GB5173 in
PyTorch 2.13), not as the eager `addmm` message.

Upstream: https://github.com/pytorch/pytorch/issues/159133 (the issue's reproduction, without its
try/except); the compile-time message was rewritten by
https://github.com/pytorch/pytorch/pull/185412.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)


class BuggyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 20)

    def forward(self, x):
        return self.fc(x)


model = BuggyModel().cuda().eval()  # Model on CUDA
x = torch.randn(1, 10)              # Input on CPU

cmodel = torch.compile(model)
out = cmodel(x)  # CPU input, CUDA model
print(out.device, tuple(out.shape))
