"""Upstream library driver: safetensors checkpoints saved from and loaded onto "cuda".

With ``SAMEDEVICE_UPSTREAM_BUG=1`` the weights are loaded onto the CPU into a fresh model that
is never moved, then fed a "cuda" batch (CUDA names ``mat1`` of ``addmm``).
"""

from __future__ import annotations

import os
import tempfile

import torch
from _report import imported
from _torchvision_ops import declare_torchvision_ops

declare_torchvision_ops()  # safetensors imports torchvision, a CUDA build here (see _torchvision_ops)
import safetensors  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

imported(safetensors, "safetensors")
BUG = os.environ.get("SAMEDEVICE_UPSTREAM_BUG") == "1"
torch.manual_seed(0)
trained = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).to("cuda")
path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
save_file(trained.state_dict(), path)
restored = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
if BUG:
    restored.load_state_dict(load_file(path, device="cpu"))
else:
    state = load_file(path, device="cuda")
    restored = restored.to("cuda")
    restored.load_state_dict(state)
x = torch.randn(3, 4).to("cuda")
out = restored(x)
same = int(torch.equal(out, trained(x)))
