"""transformers 2.9.x `Trainer.train()`, reduced: when resuming from a checkpoint, the optimizer
state is loaded while the model is still on the CPU, and the model is moved afterwards. The
optimizer's moment estimates stay on the CPU; the first `optimizer.step()` mixes them with CUDA
gradients.

Upstream: https://github.com/huggingface/transformers/issues/4240 (fixed by PR #4450,
transformers 2.10.0).
"""

import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
device = torch.device("cuda")  # TrainingArguments.device
model_path = tempfile.mkdtemp(prefix="checkpoint-500-")  # trainer.train(model_path=...)


def build_model():
    """A stand-in for BertForSequenceClassification."""
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))


def get_optimizers(model, num_training_steps=10):
    """Trainer.get_optimizers: AdamW with weight decay except for biases, linear schedule."""
    no_decay = ["bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=5e-5, eps=1e-8)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: max(0.0, (num_training_steps - step) / num_training_steps)
    )
    return optimizer, scheduler


# An earlier run on the GPU saved checkpoint-500/: optimizer.pt holds CUDA tensors.
model = build_model().to(device)
optimizer, scheduler = get_optimizers(model)
F.cross_entropy(model(torch.randn(4, 8, device=device)), torch.tensor([0, 1, 1, 0], device=device)).backward()
optimizer.step()
scheduler.step()
torch.save(optimizer.state_dict(), os.path.join(model_path, "optimizer.pt"))
torch.save(scheduler.state_dict(), os.path.join(model_path, "scheduler.pt"))

# The resumed run, in the order of Trainer.train() in 2.9.x.
model = build_model()  # Trainer(model=model, args=args): __init__ keeps the model where it is, the CPU
optimizer, scheduler = get_optimizers(model)
# Check if saved optimizer or scheduler states exist
if os.path.isfile(os.path.join(model_path, "optimizer.pt")) and os.path.isfile(
    os.path.join(model_path, "scheduler.pt")
):
    # Load in optimizer and scheduler states
    optimizer.load_state_dict(torch.load(os.path.join(model_path, "optimizer.pt")))
    scheduler.load_state_dict(torch.load(os.path.join(model_path, "scheduler.pt")))

model.to(device)  # ... and only now the model moves; the optimizer state does not

# _training_step(model, inputs, optimizer), then optimizer.step()
inputs = {"x": torch.randn(4, 8), "labels": torch.tensor([1, 0, 0, 1])}
inputs = {k: v.to(device) for k, v in inputs.items()}
loss = F.cross_entropy(model(inputs["x"]), inputs["labels"])
loss.backward()
optimizer.step()
scheduler.step()
print(loss.item())
