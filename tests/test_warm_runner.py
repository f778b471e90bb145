"""The warm runner runs programs as a fresh ``python script.py`` would, and keeps them apart.

(`samedevice verify` forks every program from one warm interpreter per job; these tests pin
what a fork must not change: exit status, the recorded exception, the device view per mode,
and that nothing a program does reaches the next one.)
"""

from __future__ import annotations

import textwrap

import pytest

from samedevice.sim.warm import WarmRunner


@pytest.fixture(scope="module")
def warm():
    with WarmRunner() as runner:
        yield runner


def _program(tmp_path, name: str, source: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_a_programs_changes_do_not_reach_the_next_program(warm, tmp_path):
    leaky = _program(tmp_path, "leaky.py", """
        import torch
        torch.samedevice_leak = "left by leaky.py"  # a monkeypatch on a shared module
        x = torch.ones(2, device="cuda")
        print(x.device)
    """)
    clean = _program(tmp_path, "clean.py", """
        import torch
        import samedevice.sim
        print(hasattr(torch, "samedevice_leak"), samedevice.sim.is_enabled(),
              torch.ones(1, device="cuda").device)
    """)
    first = warm.run(leaky, "cuda")
    assert (first.returncode, first.stdout, first.usage) == (0, "cuda:0\n", 1)
    # the plain-CPU reference run: no leak, no simulator, "cuda" read as "cpu"
    second = warm.run(clean, "cpu")
    assert (second.returncode, second.stdout, second.usage) == (0, "False False cpu\n", 0)


def test_exit_status_exception_and_values_are_recorded_as_in_a_fresh_interpreter(warm, tmp_path):
    failing = _program(tmp_path, "failing.py", """
        import torch
        a = torch.ones(2, device="cuda")
        b = torch.ones(2)
        a + b
    """)
    result = warm.run(failing, "cuda")
    assert result.returncode == 1 and not result.ok
    assert result.exception["type"] == "RuntimeError"
    assert result.exception["message"] == ("Expected all tensors to be on the same device, but "
                                           "found at least two devices, cuda:0 and cpu!")
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert "_warm_worker" not in result.stderr  # the fork's own frame is left out
    exits = _program(tmp_path, "exits.py", "import sys\nn = 7\nsys.exit(3)\n")
    assert warm.run(exits, "plain").returncode == 3
    leaves = _program(tmp_path, "leaves.py", "import torch\nx = torch.arange(3.0, device='cuda')\n")
    values = warm.run(leaves, "cuda").values()
    assert list(values) == ["x"] and values["x"].tolist() == [0.0, 1.0, 2.0]


def test_a_program_past_its_timeout_is_killed(warm, tmp_path):
    sleeper = _program(tmp_path, "sleeper.py", "import time\ntime.sleep(60)\n")
    result = warm.run(sleeper, "plain", timeout=1)
    assert result.timed_out and result.returncode == -9
    assert warm.run(_program(tmp_path, "after.py", "print('next')\n"), "plain").stdout == "next\n"


def test_backward_on_the_second_gpu_runs_hooks_under_the_alias(warm, tmp_path):
    # The worker imports the simulator's modules before any child registers the backend: what
    # backward runs must not depend on that order (a copy of torch.autograd.backward taken at
    # import kept the multithreaded engine, whose per-device queues stop at sim:0)
    program = _program(tmp_path, "backward.py", """
        import torch
        x = torch.ones(3, device="cuda:1", requires_grad=True)
        x.register_hook(lambda grad: print(grad.device, grad.is_cuda))
        (x * 2).sum().backward()
        print(x.grad.device)
    """)
    result = warm.run(program, "cuda", extra_env={"SAMEDEVICE_GPUS": "2"})
    assert (result.returncode, result.stdout) == (0, "cuda:1 True\ncuda:1\n"), result.stderr
