"""pytorch/pytorch#159133, fixed: the input goes to the model's device before the compiled
model is called (the issue's own working call is `model(x.to('cuda'))`).

Upstream: https://github.com/pytorch/pytorch/issues/159133
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
x = torch.randn(1, 10)              # Input made on CPU ...
x = x.to("cuda")                    # ... and moved where the model is

cmodel = torch.compile(model)
out = cmodel(x)
print(out.device, tuple(out.shape))
