"""GPU programs written the way they are written in the wild, run unmodified.

Each program in ``programs/`` runs under ``samedevice run`` (a simulated machine with two GPUs)
and under ``samedevice run --cpu``; what it computed must be equal. Its one-line bug variant
(the line marked ``# bug:``) must raise CUDA's exact text. All programs run in one interpreter
per mode (``programs/_driver.py``), the two modes side by side, to keep this cheap.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow

PROGRAMS = Path(__file__).parent / "programs"
_SAME = "Expected all tensors to be on the same device, "

# program -> the exception its bug variant raises on CUDA (type, exact message)
BUGS = {
    "is_available_idiom": ("RuntimeError", _SAME + "but got target is on cpu, different from other tensors on "
                           "cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)"),
    "amp_grad_scaler": ("RuntimeError", _SAME + "but got mat1 is on cpu, different from other tensors on cuda:0 "
                        "(when checking argument in method wrapper_CUDA_addmm)"),
    "stream_event_timing": ("RuntimeError", _SAME + "but got mat2 is on cpu, different from other tensors on "
                            "cuda:0 (when checking argument in method wrapper_CUDA_mm)"),
    "set_device": ("RuntimeError", _SAME + "but found at least two devices, cuda:0 and cpu!"),
    "memory_stats": ("RuntimeError", _SAME + "but got index is on cpu, different from other tensors on cuda:0 "
                     "(when checking argument in method wrapper_CUDA__index_select)"),
    "checkpoint_map_location": ("RuntimeError", _SAME + "but found at least two devices, cuda:0 and cpu!"),
    "dataloader_pinned": ("RuntimeError", _SAME + "but got target is on cpu, different from other tensors on "
                          "cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)"),
    "thread_pool": ("RuntimeError", _SAME + "but found at least two devices, cuda:0 and cpu!"),
    "causal_attention_mask": ("RuntimeError", "expected self and mask to be on the same device, but got mask on "
                              "cpu and self on cuda:0"),
    "generator_seeding": ("RuntimeError", "Expected a 'cuda' device type for generator but found 'cpu'"),
    # s_addmm_out_sparse_dense_cuda's own check (SparseCUDATensorMath.cu), reached through
    # torch.sparse.mm -> _sparse_mm -> _sparse_addmm with the zeros on mat2's device
    "sparse_graph_conv": ("RuntimeError", "Expected all tensors to be on the same device. addmm: expected 'mat1' "
                          "to be CUDA, but got CPU"),
    "autocast_attention_block": ("RuntimeError", _SAME + "but got target is on cpu, different from other tensors "
                                 "on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)"),
    "compiled_attention_autocast": ("RuntimeError", _SAME + "but found at least two devices, cuda:0 and cpu!"),
    "legacy_tensor_types": ("RuntimeError", "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) "
                            "should be the same or input should be a MKLDNN tensor and weight is a dense tensor"),
}
# Messages that carry a traceback or a link after their first lines: the head is compared exactly.
BUG_HEADS = {
    "data_parallel": ("RuntimeError", "Caught RuntimeError in replica 0 on device 0.\nOriginal Traceback "
                      "(most recent call last):\n", "\nRuntimeError: " + _SAME + "but found at least two devices, "
                      "cuda:0 and cpu!\n"),
    "compiled_model": ("TorchRuntimeError", "Tensor device mismatch\n  Explanation: " + _SAME + "but found at "
                       "least two devices, cuda:0 and cpu!\n  Hint: Move inputs, parameters, and buffers to the "
                       "same device.\n\n  Developer debug context: call_method mul\n", None),
    # (then a link to the graph-break page and the user's stack, in the temporary file it ran from)
}
NAMES = sorted(BUGS) + sorted(BUG_HEADS)
# DataParallel splits the batch over the two GPUs and sums the replicas' gradients, so its
# gradients differ from one CPU pass by float rounding (as on real GPUs): compared with the
# float32 tolerance. Everything else must be bit-identical.
TOLERANT = {"data_parallel"}


def test_every_program_is_listed():
    assert sorted(p.stem for p in PROGRAMS.glob("*.py") if not p.stem.startswith("_")) == sorted(NAMES)
    assert len(NAMES) >= 12


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("programs")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    procs = {}
    for mode, flags in (("sim", ["--gpus", "2"]), ("cpu", ["--cpu", "--gpus", "2"])):
        cmd = [sys.executable, "-m", "samedevice", "run", *flags, str(PROGRAMS / "_driver.py"),
               str(out / f"{mode}.pt"), *NAMES]
        procs[mode] = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    results = {}
    for mode, proc in procs.items():
        log, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, log[-3000:]
        results[mode] = torch.load(out / f"{mode}.pt", weights_only=False)
    return results


@pytest.mark.parametrize("name", NAMES)
def test_program_runs_on_the_simulated_gpu_as_on_the_cpu(runs, name):
    sim, cpu = runs["sim"][name], runs["cpu"][name]
    assert "error" not in sim and "error" not in cpu, (sim.get("error"), cpu.get("error"))
    assert sim["values"] and sorted(sim["values"]) == sorted(cpu["values"])
    if name in TOLERANT:
        torch.testing.assert_close(sim["values"], cpu["values"])
    else:
        torch.testing.assert_close(sim["values"], cpu["values"], rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(BUGS))
def test_bug_variant_raises_cudas_exact_text(runs, name):
    assert runs["sim"][name]["bug"] == list(BUGS[name])


@pytest.mark.parametrize("name", sorted(BUG_HEADS))
def test_bug_variant_raises_cudas_text_head(runs, name):
    kind, head, tail = BUG_HEADS[name]
    raised, message = runs["sim"][name]["bug"]
    assert raised == kind and message.startswith(head)
    if tail is not None:
        assert message.endswith(tail)
    assert "/samedevice/" not in message  # the traceback a CUDA user sees: no simulator frames


def test_a_program_runs_standalone_under_samedevice_run():
    out = subprocess.run([sys.executable, "-m", "samedevice", "run", str(PROGRAMS / "set_device.py")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
