"""PyTorch 2.0.x, reduced from a transformers `Trainer` run with `optim="adamw_torch_fused"` on one
GPU: resuming loads `optimizer.pt` with `map_location="cpu"`; `Optimizer.load_state_dict` casts
the moments to the parameters' GPU but leaves each `state["step"]` on the CPU, and the fused
AdamW kernel wants all of its tensors on the GPU.

Upstream: https://github.com/pytorch/pytorch/issues/103256 (user reports: pytorch/pytorch#104767,
huggingface/transformers#24708 and #26171); fixed by PR #102619, PyTorch 2.1.0.
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

loss = F.cross_entropy(model(torch.randn(4, 8, device=device)), torch.tensor([1, 0, 0, 1], device=device))
loss.backward()
optimizer.step()  # _fused_adamw_: state_steps on the CPU, everything else on the GPU
print(loss.item())
