"""The same resumed fused-AdamW run, with the workaround for PyTorch 2.0.x: after loading, move
each `state["step"]` to its parameter's device -- what `Optimizer.load_state_dict` itself does
for fused and capturable optimizers since PyTorch 2.1.0.

Upstream: https://github.com/pytorch/pytorch/pull/102619 ("Fix optim state_dict casting to allow
step to cast for fused/capturable", issue #103256).
"""

import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
device = torch.device("cuda")  # TrainingArguments.device, one GPU: world_size == 1
checkpoint = tempfile.mkdtemp(prefix="checkpoint-500-")


def create_optimizer(model):
    """Trainer.create_optimizer for optim="adamw_torch_fused"."""
    return torch.optim.AdamW(model.parameters(), lr=5e-5, fused=True)


# The first run saved checkpoint-500/optimizer.pt (Trainer._save_checkpoint).
model = nn.Linear(8, 2).to(device)
optimizer = create_optimizer(model)
F.cross_entropy(model(torch.randn(4, 8, device=device)), torch.tensor([0, 1, 1, 0], device=device)).backward()
optimizer.step()
torch.save(optimizer.state_dict(), os.path.join(checkpoint, "optimizer.pt"))

# trainer.train(resume_from_checkpoint=checkpoint)
model = nn.Linear(8, 2).to(device)
optimizer = create_optimizer(model)
# Trainer._load_optimizer_and_scheduler: "We use the CPU when training on one GPU to avoid OOM"
map_location = "cpu"  # self.args.device if self.args.world_size > 1 else "cpu"
optimizer.load_state_dict(torch.load(os.path.join(checkpoint, "optimizer.pt"), map_location=map_location))
# ---- Recreates PyTorch 2.0.x (not part of the Trainer code) -------------------------------------
# 2.0.x's load_state_dict cast every state tensor to its parameter's device *except* "step", which
# stayed where torch.load had put it, the CPU. PyTorch >= 2.1 casts "step" for fused optimizers
# (PR #102619), so on a current PyTorch this line puts the steps back where 2.0.x left them.
for state in optimizer.state.values():
    state["step"] = state["step"].cpu()
# -------------------------------------------------------------------------------------------------
# The fix: the step counters of a fused optimizer go where their parameters are (PyTorch >= 2.1
# does this inside load_state_dict; on 2.0.x, do it yourself after loading).
for param, state in optimizer.state.items():
    state["step"] = state["step"].to(param.device)

loss = F.cross_entropy(model(torch.randn(4, 8, device=device)), torch.tensor([1, 0, 0, 1], device=device))
loss.backward()
optimizer.step()
print(loss.item())
