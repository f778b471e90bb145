from __future__ import annotations

import pytest
import torch

from samedevice import sim


@pytest.fixture(scope="session")
def simdev() -> torch.device:
    """The simulated accelerator under its own name (``sim:0``)."""
    return sim.enable()


@pytest.fixture
def cuda(simdev: torch.device):
    """The simulated accelerator answering to "cuda" for the duration of one test."""
    with sim.cuda_alias():
        yield torch.device("cuda")
