"""torch.compile on the simulated accelerator: traced for real (aot_eager), never skipped."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from samedevice.testing import assert_matches_cpu

pytestmark = pytest.mark.slow


def _model(device):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)


def test_compile_uses_aot_eager_and_says_so(cuda):
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = torch.compile(_model(cuda))
        compiled(torch.ones(3, 4, device=cuda))
    assert any("aot_eager" in str(w.message) for w in caught)
    counters = torch._dynamo.utils.counters
    assert counters["stats"]["unique_graphs"] >= 1  # Dynamo captured a graph: not skipped


def test_compiled_model_matches_eager_cpu(cuda):
    torch._dynamo.reset()

    def program(device):
        model = _model(device)
        fn = torch.compile(model) if device.type != "cpu" else model
        return fn(torch.arange(12.0, device=device).view(3, 4))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert_matches_cpu(program, device=cuda)


def test_device_mismatch_is_reported_by_dynamo(cuda):
    torch._dynamo.reset()
    model = _model(cuda)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        compiled = torch.compile(model)
        with pytest.raises(Exception) as info:
            compiled(torch.ones(3, 4))  # batch left on the CPU
    text = str(info.value)
    assert text.startswith(
        "Tensor device mismatch\n"
        "  Explanation: Expected all tensors to be on the same device, but found at least two "
        "devices, cpu and cuda:0!\n"
        "  Hint: Move inputs, parameters, and buffers to the same device.\n"
    )
    assert "sim" not in text.split("from user code:")[0]  # spelled as on CUDA
