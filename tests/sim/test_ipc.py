"""GPU tensors sent to other processes share their memory, as CUDA IPC does (issue 27: a GPU
tensor given to a spawned process raised ``_share_fd_: only available on CPU``)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import pytest
import torch


def test_a_pickled_gpu_tensor_shares_its_memory_with_the_original(cuda):
    t = torch.arange(6.0, device=cuda).view(2, 3)[:, 1:]  # a view with an offset and strides
    received = pickle.loads(ForkingPickler.dumps(t))
    assert received.device == torch.device("cuda", 0) and received.shape == (2, 2)
    received.add_(10)
    assert t.tolist() == [[11.0, 12.0], [14.0, 15.0]]
    assert t.is_shared() and received.is_shared()  # as CUDA tensors answer


def test_share_memory_keeps_a_parameter_a_gpu_parameter(cuda):
    layer = torch.nn.Linear(3, 2).to(cuda)
    before = layer.weight.detach().clone()
    layer.share_memory()
    assert isinstance(layer.weight, torch.nn.Parameter) and layer.weight.device == torch.device("cuda", 0)
    assert torch.equal(layer.weight.detach(), before)
    received = pickle.loads(ForkingPickler.dumps(layer.weight))
    assert isinstance(received, torch.nn.Parameter) and received.requires_grad
    with torch.no_grad():
        received.zero_()
    assert layer.weight.abs().sum().item() == 0


@pytest.mark.slow
def test_hogwild_workers_train_the_parents_gpu_model_as_on_the_cpu():
    program = Path(__file__).parent / "programs" / "_hogwild.py"
    printed = {}
    for mode, flags in (("sim", []), ("cpu", ["--cpu"])):
        proc = subprocess.run([sys.executable, "-m", "samedevice", "run", *flags, str(program)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        printed[mode] = proc.stdout
    assert printed["sim"].startswith("moved True ") and printed["sim"].endswith(" shared True\n")
    assert printed["sim"] == printed["cpu"]
