"""Writes `checkpoint.pth` next to this file the way a GPU machine writes an OpenMMLab checkpoint:
the model is on the GPU when it is saved, so `torch.save` tags every storage `cuda:0`.

Run it on a GPU machine with `python make_checkpoint.py`, or on a CPU-only machine with
`samedevice run snippets/mmdeploy-load-checkpoint-no-map-location-cpu-only/make_checkpoint.py`
(the simulated accelerator tags its storages `cuda:0` too). broken.py and fixed.py read the file.
"""

from pathlib import Path

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
model.to("cuda")  # trained on a GPU
checkpoint = {"meta": {"epoch": 12, "iter": 1200}, "state_dict": model.state_dict()}
torch.save(checkpoint, Path(__file__).with_name("checkpoint.pth"))
