"""transformers 2.10.0 `Trainer`, reduced: `Trainer.__init__` moves the model to the device, so
the optimizer is built over CUDA parameters and `load_state_dict` casts the restored state to
CUDA; the checkpoint is also loaded with `map_location=args.device`.

Upstream: https://github.com/huggingface/transformers/pull/4450 ("[Trainer] move model to device
before setting optimizer", fixes issue #4240).
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

# The resumed run, in the order of Trainer in 2.10.0.
model = build_model().to(device)  # 2.10.0: Trainer.__init__ does self.model = model.to(args.device)
optimizer, scheduler = get_optimizers(model)
# Check if saved optimizer or scheduler states exist
if os.path.isfile(os.path.join(model_path, "optimizer.pt")) and os.path.isfile(
    os.path.join(model_path, "scheduler.pt")
):
    # Load in optimizer and scheduler states
    optimizer.load_state_dict(torch.load(os.path.join(model_path, "optimizer.pt"), map_location=device))
    scheduler.load_state_dict(torch.load(os.path.join(model_path, "scheduler.pt")))

# _training_step(model, inputs, optimizer), then optimizer.step()
inputs = {"x": torch.randn(4, 8), "labels": torch.tensor([1, 0, 0, 1])}
inputs = {k: v.to(device) for k, v in inputs.items()}
loss = F.cross_entropy(model(inputs["x"]), inputs["labels"])
loss.backward()
optimizer.step()
scheduler.step()
print(loss.item())
