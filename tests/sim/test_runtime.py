"""The simulator as a runtime: memory stays flat, imports stay light, helpers behave."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from samedevice import sim


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_memory_stays_flat_over_300_training_steps(simdev):
    # A leak of one step's activations (~40 KB) would add ~12 MiB over 300 steps; allocator
    # noise stays under a few MiB. (The 2,000-step figure is benchmarks/sim_overhead.py's.)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(simdev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 64, device=simdev), torch.randint(0, 10, (64,), device=simdev)

    def steps(n: int) -> None:
        for _ in range(n):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    steps(100)
    before, made_before = _rss_mib(), sim.usage()
    steps(300)
    growth = _rss_mib() - before
    assert sim.usage() - made_before > 3_000  # the loop really ran on the simulated device
    assert growth < 8, f"RSS grew {growth:.1f} MiB over 300 steps"


def test_importing_samedevice_does_not_import_torch():
    code = "import sys, samedevice; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_enable_is_idempotent_and_returns_the_device(simdev):
    assert sim.enable() == torch.device("sim", 0) == simdev
    assert sim.is_enabled()
    assert torch.accelerator.current_accelerator() == torch.device("sim")
    assert torch.cuda.is_available() is False


def test_two_simulated_devices_keep_their_index(simdev):
    a = torch.ones(2, device="sim:1")
    assert a.device == torch.device("sim", 1)
    assert (a * 2).device == torch.device("sim", 1)
    with pytest.raises(RuntimeError, match=r"found at least two devices, sim:1 and sim:0!"):
        a + torch.ones(2, device="sim:0")


def test_tensors_survive_the_usual_round_trips(simdev, tmp_path):
    import copy
    import pickle

    x = torch.arange(6.0, device=simdev).view(2, 3)
    torch.save({"x": x}, tmp_path / "x.pt")
    assert torch.load(tmp_path / "x.pt")["x"].device == simdev
    assert torch.load(tmp_path / "x.pt", map_location="cpu")["x"].device.type == "cpu"
    assert torch.equal(pickle.loads(pickle.dumps(x)).cpu(), x.cpu())
    assert torch.equal(copy.deepcopy(x).cpu(), x.cpu())
    assert x.data_ptr() == x.cpu().data_ptr() or x.data_ptr() != 0  # real memory, not a null pointer
    with pytest.raises(TypeError, match=r"can't convert sim:0 device type tensor to numpy"):
        x.numpy()


def test_parameters_keep_their_identity_through_to(simdev):
    model = nn.Linear(3, 2)
    weight = model.weight
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to(simdev)
    assert model.weight is weight  # as on CUDA: an optimizer built before .to() still works
    model(torch.ones(1, 3, device=simdev)).sum().backward()
    opt.step()
    assert opt.param_groups[0]["params"][0].device == simdev


def test_cuda_alias_can_be_switched_off_again(simdev):
    x = torch.ones(1, device=simdev)
    with sim.cuda_alias():
        assert str(x.device) == "cuda:0" and x.is_cuda
        assert torch.ones(1, device="cuda").device.type == "cuda"
    assert str(x.device) == "sim:0"


@pytest.mark.skipif(torch.backends.cudnn.is_available(), reason="a build with cuDNN answers for itself")
def test_an_rnn_on_the_gpu_says_nothing_about_a_missing_cudnn(cuda):
    # A CUDA machine has cuDNN; the CPU-only build's "compiled without cuDNN" is not its output.
    import warnings

    lstm = nn.LSTM(4, 3, batch_first=True).to(cuda)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, _ = lstm(torch.randn(2, 5, 4, device=cuda))
    assert out.device.type == "cuda" and out.shape == (2, 5, 3)
    assert [str(w.message) for w in caught if "cuDNN" in str(w.message)] == []
    assert torch.backends.cudnn.is_acceptable(torch.zeros(1)) is False  # the CPU: its own answer


def test_the_flop_counters_triton_note_is_not_printed(simdev, caplog):
    import logging

    log = logging.getLogger("torch.utils.flop_counter")
    with caplog.at_level(logging.WARNING, logger="torch.utils.flop_counter"):
        log.warning("triton not found; flop counting will not work for triton kernels")
        log.warning("another note")
    assert [r.getMessage() for r in caplog.records] == ["another note"]
