"""Running programs as users do: the runner's modes, and programs that never use the device."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from samedevice.sim.runner import rank_exception, run_script

pytestmark = pytest.mark.slow


def _script(tmp_path, body: str):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_the_is_available_idiom_picks_the_simulated_gpu_and_shows_the_bug(tmp_path):
    prog = _script(tmp_path, """
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"   # True on the simulated machine
        model = torch.nn.Linear(3, 2).to(device)
        out = model(torch.ones(4, 3))
    """)
    result = run_script(prog, "cuda")
    assert result.exception["message"] == (
        "Expected all tensors to be on the same device, but got mat1 is on cpu, different from other "
        "tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)")
    assert result.usage > 0


def test_a_program_that_stays_on_the_cpu_never_uses_the_accelerator(tmp_path):
    prog = _script(tmp_path, """
        import torch
        model = torch.nn.Linear(3, 2)
        out = model(torch.ones(4, 3))
    """)
    result = run_script(prog, "cuda")
    assert result.ok and result.usage == 0


def test_cuda_mode_raises_cudas_message_and_cpu_mode_runs(tmp_path):
    prog = _script(tmp_path, """
        import torch
        model = torch.nn.Linear(3, 2).cuda()
        out = model(torch.ones(4, 3))
    """)
    sim = run_script(prog, "cuda")
    assert sim.exception["type"] == "RuntimeError"
    assert sim.exception["message"].endswith("(when checking argument in method wrapper_CUDA_addmm)")
    assert "/samedevice/" not in sim.stderr  # the traceback a CUDA user sees
    assert sim.usage > 0
    cpu = run_script(prog, "cpu")
    assert cpu.ok and set(cpu.values()) == {"model", "out"}


def test_cpu_mode_reads_a_cuda_legacy_type_cast_as_the_cast(tmp_path):
    # torchsummary: torch.rand(2, 3).type(torch.cuda.FloatTensor) in the CPU reference run
    prog = _script(tmp_path, """
        import torch
        x = torch.arange(3).type(torch.cuda.FloatTensor)
        y = torch.arange(3).type("torch.cuda.DoubleTensor")
    """)
    cpu = run_script(prog, "cpu")
    assert cpu.ok
    assert {k: (str(v.device), v.dtype) for k, v in cpu.values().items()} == {
        "x": ("cpu", torch.float32), "y": ("cpu", torch.float64)}


def test_a_bare_device_ordinal_is_gpu_0_in_both_runs(tmp_path):
    # transformers: from_pretrained(..., device_map={"": 0}) turns the ordinal into torch.device(0)
    prog = _script(tmp_path, """
        import torch
        torch.manual_seed(0)
        gpu = 0 if torch.cuda.is_available() else -1
        same = int(torch.device(gpu) == torch.device("cuda:0"))
        on_cpu = int(torch.device(gpu) == torch.device("cpu"))
        x = torch.zeros(2, device=gpu) + torch.ones(2).to(gpu)
        y = torch.nn.Linear(2, 1).to(gpu)(x)  # Module.to parses the ordinal itself
    """)
    sim, cpu = run_script(prog, "cuda"), run_script(prog, "cpu")
    assert sim.ok and cpu.ok, (sim.stderr, cpu.stderr)
    assert (sim.values()["same"], sim.values()["on_cpu"]) == (1, 0)
    assert (cpu.values()["same"], cpu.values()["on_cpu"]) == (0, 1)
    assert str(cpu.values()["x"].device) == "cpu" and sim.usage > 0
    assert str(cpu.values()["y"].device) == "cpu"
    torch.testing.assert_close(sim.values()["y"], cpu.values()["y"])


def test_samedevice_run_returns_the_programs_exit_status(tmp_path):
    prog = _script(tmp_path, "import sys, torch; torch.ones(1, device='cuda'); sys.exit(3)")
    out = subprocess.run([sys.executable, "-m", "samedevice", "run", str(prog)], capture_output=True)
    assert out.returncode == 3
    out = subprocess.run([sys.executable, "-m", "samedevice", "run", str(tmp_path / "none.py")],
                         capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.startswith("samedevice run: no such file")


def test_rank_exception_reads_the_last_exception_line():
    text = "\n-- Process 1 terminated with the following error:\nTraceback ...\n  File x\nRuntimeError: No backend type associated with device type cpu\n"
    assert rank_exception(text) == ("RuntimeError", "No backend type associated with device type cpu")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "samedevice", "run", *args], capture_output=True, text=True)


def test_samedevice_run_never_gives_a_silent_all_clear(tmp_path):
    prog = _script(tmp_path, "import torch; print(torch.ones(2).sum().item())")
    out = _run(str(prog))
    assert out.returncode == 4 and out.stdout == "2.0\n"
    assert out.stderr == (f"samedevice: {prog} never put a tensor on the simulated GPU: it ran entirely on the "
                          "CPU, so it proves nothing about device placement (--allow-cpu accepts this)\n")
    assert _run("--allow-cpu", str(prog)).returncode == 0
    assert _run("--cpu", str(prog)).returncode == 0  # the reference run is on the CPU by design


def test_samedevice_run_gpus_sets_the_machine(tmp_path):
    prog = _script(tmp_path, """
        import torch
        print(torch.cuda.device_count(), torch.accelerator.device_count(), torch.ones(1).cuda(1).device)
    """)
    assert _run("--gpus", "2", str(prog)).stdout == "2 2 cuda:1\n"
    one = _run(str(prog))
    assert one.returncode == 1
    assert "torch.AcceleratorError: CUDA error: invalid device ordinal\nGPU device may be out of range" in one.stderr
    bad = _run("--gpus", "0", str(prog))
    assert bad.returncode == 2 and bad.stderr.endswith("--gpus wants 1 to 16 GPUs, not 0\n")
