"""The pytest plugin that users get with samedevice: nothing changes unless asked."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run_pytest(tmp_path, body: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_user.py").write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args,
                           str(tmp_path / "test_user.py")], capture_output=True, text=True, cwd=tmp_path)


def test_the_accelerator_fixture_gives_a_device_that_mismatches_like_cuda(tmp_path):
    out = _run_pytest(tmp_path, """
        import pytest, torch
        from samedevice.testing import expect_device_error

        def test_model(accelerator):
            model = torch.nn.Linear(3, 2).to(accelerator)
            with expect_device_error(template="T2", op="addmm", argument="mat1"):
                model(torch.ones(1, 3))
    """)
    assert out.returncode == 0, out.stdout + out.stderr


def test_sim_device_option_enables_the_cuda_alias_for_the_session(tmp_path):
    body = """
        import torch

        def test_cuda_code_runs():
            assert torch.ones(1, device="cuda").device.type == "cuda"
    """
    assert _run_pytest(tmp_path, body, "--sim-device=cuda").returncode == 0
    import torch

    if not torch.cuda.is_available():  # without the option nothing is simulated
        assert _run_pytest(tmp_path, body).returncode == 1


def test_gpu_marked_tests_are_skipped_with_a_reason_on_cpu_machines(tmp_path):
    out = _run_pytest(tmp_path, """
        import pytest

        @pytest.mark.gpu
        def test_on_gpu():
            raise AssertionError("must not run here")
    """, "-rs")
    assert out.returncode == 0 and "needs a CUDA GPU" in out.stdout


def test_sim_gpus_sets_the_simulated_machine_and_gpu_tests_still_skip(tmp_path):
    body = """
        import pytest, torch

        def test_count():
            assert torch.cuda.is_available() and torch.cuda.device_count() == {n}

        @pytest.mark.gpu
        def test_on_gpu():
            raise AssertionError("the simulated machine is no real GPU")
    """
    assert _run_pytest(tmp_path, body.format(n=1), "--sim-device=cuda").returncode == 0
    assert _run_pytest(tmp_path, body.format(n=2), "--sim-device=cuda", "--sim-gpus=2").returncode == 0
    (tmp_path / "pytest.ini").write_text("[pytest]\nsim_gpus = 3\n")
    assert _run_pytest(tmp_path, body.format(n=3), "--sim-device=cuda").returncode == 0
