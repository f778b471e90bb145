from __future__ import annotations

import pytest
import torch


@pytest.fixture
def acc(accelerator: torch.device) -> torch.device:
    """The accelerator as tensors report it: ``cuda:0`` on a GPU runner, else ``sim:0``."""
    return torch.device(accelerator.type, accelerator.index or 0)


@pytest.fixture
def acc1(acc: torch.device) -> torch.device:
    """A second accelerator (the simulator always has two)."""
    if acc.type == "cuda" and torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    return torch.device(acc.type, 1)


@pytest.fixture
def acc_label(acc: torch.device) -> str:
    """How reports spell the accelerator: ``cuda:0`` or ``sim:0``."""
    return f"{acc.type}:{acc.index}"
