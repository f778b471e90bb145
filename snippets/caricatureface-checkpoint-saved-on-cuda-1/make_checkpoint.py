"""Writes `resnet34_adam.pth` and `mynet_adam.pth` next to this file the way the CaricatureFace
authors' training machine wrote theirs: the models were on GPU 1 (`device_num=1`) when they were
saved, so `torch.save` tags every storage `cuda:1`.

Run it on a machine with two GPUs, or on a CPU with the simulated one:
`samedevice run --gpus 2 snippets/caricatureface-checkpoint-saved-on-cuda-1/make_checkpoint.py`.
broken.py and fixed.py read the files.
"""

from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).parent
torch.manual_seed(0)
device_num = 1  # the authors trained on their second GPU
model1 = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 100))
model2 = nn.Sequential(nn.Linear(94, 32), nn.ReLU(), nn.Linear(32, 32), nn.Linear(32, 27))
model1, model2 = model1.to(device_num), model2.to(device_num)
torch.save({"net": model1.state_dict(), "epoch": 2000}, HERE / "resnet34_adam.pth")
torch.save({"net": model2.state_dict(), "epoch": 2000}, HERE / "mynet_adam.pth")
