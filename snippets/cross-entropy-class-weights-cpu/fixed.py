"""pytorch/pytorch#122757, fixed: the loss module is moved with the model, so its `weight`
buffer is on the GPU too.

Upstream: https://github.com/pytorch/pytorch/issues/122757 (the issue's own reproduction:
`loss_fn = torch.nn.CrossEntropyLoss(weight=weights)` with `weights = torch.randn(5)`); the
message was reworded by https://github.com/pytorch/pytorch/pull/155085 (PyTorch 2.8) to name
`weight`.
"""

import torch
from torch import nn

torch.manual_seed(0)
device = "cuda"

# Class weights for an imbalanced data set: inverse class frequencies, made on the CPU.
class_counts = torch.tensor([500.0, 120.0, 60.0, 15.0, 5.0])
weights = class_counts.sum() / (len(class_counts) * class_counts)

model = nn.Linear(8, 5).to(device)
loss_fn = nn.CrossEntropyLoss(weight=weights).to(device)  # moves the `weight` buffer
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

inputs = torch.randn(10, 8).to(device)
labels = torch.randint(0, 5, (10,)).to(device)

loss = loss_fn(model(inputs), labels)
loss.backward()
optimizer.step()
print(loss)
