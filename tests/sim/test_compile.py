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


def test_compiled_attention_under_autocast_runs_quietly_in_both_runs(tmp_path):
    """nanoGPT's defaults (compile + scaled_dot_product_attention + bf16 autocast): the traced
    SDPA asked the CPU's kernel choice with FakeTensors ("Cannot access data pointer of Tensor");
    the reference run compiled its own autocast kernels (Dynamo warned it cannot trace
    "pybind11_object.__new__") and logged torch's "triton not found", which no GPU machine prints."""
    import subprocess
    import sys

    program = tmp_path / "attention.py"
    program.write_text(
        "import torch\nimport torch.nn.functional as F\n"
        "torch.manual_seed(0)\n"
        "lin = torch.nn.Linear(8, 8).cuda()\n"
        "x = torch.randn(1, 2, 4, 8, device='cuda')\n"
        "def h(x):\n    q = lin(x)\n    return F.scaled_dot_product_attention(q, q, q, is_causal=True)\n"
        "g = torch.compile(h)\n"
        "with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "    y = g(x).float().sum()\n"
        "y.backward()\n"
        "print(round(y.item(), 4), round(lin.weight.grad.sum().item(), 4))\n")
    printed = {}
    for mode, flags in (("sim", []), ("cpu", ["--cpu"])):
        proc = subprocess.run([sys.executable, "-m", "samedevice", "run", "--no-diagnosis", *flags, str(program)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        noise = [line for line in proc.stderr.splitlines() if "aot_eager" not in line and "torch.compile(h)" not in line]
        assert noise == [], (mode, noise)
        printed[mode] = proc.stdout
    assert printed["sim"] == printed["cpu"]
