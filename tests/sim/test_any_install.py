"""The stand-in on any PyTorch install: what a CUDA wheel without a driver, and the CPU reference
run, used to get wrong (issue 27), each as a program run the way `samedevice run` runs it.

A CUDA wheel answers some questions differently from the CPU wheel this suite runs on
(`torch._use_cudnn_rnn_flatten_weight()` is True, `torch._C._cuda_getDeviceCount` exists);
tests that need its answer make the CPU wheel give it, in the child process only.
"""

from __future__ import annotations

import textwrap

import pytest

from samedevice.sim.runner import run_script

pytestmark = pytest.mark.slow


def _run(tmp_path, body: str, mode: str = "cuda", **env: str):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(body))
    return run_script(path, mode, extra_env=env or None)


def _lines(result) -> list[str]:
    assert result.ok, result.stderr
    return result.stdout.splitlines()


def test_the_program_is_told_its_accelerator_is_cuda_and_pytorch_still_drives_the_simulator(tmp_path):
    result = _run(tmp_path, """
        import torch
        acc = torch.accelerator.current_accelerator()
        print(acc, acc.type == "cuda", torch.distributed.get_default_backend_for_device(acc))
        # PyTorch's own Python (here the DataLoader's pinning thread) still finds the simulator
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 2)),
                                             batch_size=2, pin_memory=True)
        print(all(b.is_pinned() for (b,) in loader))
    """)
    assert _lines(result) == ["cuda True nccl", "True"]
    assert "sim" not in result.stderr


def test_the_simulators_own_name_is_kept_with_sim_name(tmp_path):
    result = _run(tmp_path, """
        import torch
        print(torch.accelerator.current_accelerator())
    """, mode="sim")
    assert _lines(result) == ["sim"]


def test_the_cpu_reference_run_answers_as_the_simulated_machine_does(tmp_path):
    body = """
        import torch
        print(torch.accelerator.current_accelerator(), torch.accelerator.is_available(),
              torch.accelerator.device_count(), torch.cuda.device_count())
        print(torch.zeros(2).pin_memory().is_pinned(), torch.zeros(2).is_pinned())
        model = torch.nn.Linear(3, 2).cuda()
        opt = torch.optim.Adam(model.parameters())   # its step asks torch.accelerator for a stream
        model(torch.ones(4, 3, device="cuda")).sum().backward()
        opt.step()
        print("stepped")
    """
    assert _lines(_run(tmp_path, body, mode="cpu", SAMEDEVICE_GPUS="3")) == [
        "cuda True 3 3", "True False", "stepped"]
    assert _lines(_run(tmp_path, body, mode="cuda", SAMEDEVICE_GPUS="3")) == [
        "cuda True 3 3", "True False", "stepped"]


def test_an_lstm_moves_to_the_gpu_where_the_build_has_cudnn(tmp_path):
    # A CUDA wheel answers True here, and `flatten_parameters` then called
    # `_cudnn_rnn_flatten_weight`, which has no kernel for the simulated GPU.
    result = _run(tmp_path, """
        import torch
        from samedevice.sim import _runtime
        torch._use_cudnn_rnn_flatten_weight = lambda: True
        torch.backends.cudnn.is_available = lambda: True
        # the simulator's start-up as on a build with cuDNN
        torch.backends.cudnn.is_acceptable = torch.backends.cudnn.is_acceptable.__wrapped__
        _runtime._patch_cudnn_acceptable()
        lstm = torch.nn.LSTM(4, 8).cuda()
        out, _ = lstm(torch.ones(3, 2, 4, device="cuda"))
        print(tuple(out.shape), out.device)
    """)
    assert _lines(result) == ["(3, 2, 8) cuda:0"]
    assert "cuDNN" not in result.stderr


def test_stand_ins_keep_the_wrapped_function_pytorch_reads_at_import(tmp_path):
    # torch._dynamo lists `torch.cuda.use_mem_pool.__wrapped__` when first imported (an
    # optimizer's first step on torch 2.14); nothing is ever captured on the simulated GPUs.
    result = _run(tmp_path, """
        import torch
        print(torch.cuda.use_mem_pool.__wrapped__.__name__, torch.cuda.is_current_stream_capturing())
    """)
    assert _lines(result) == ["use_mem_pool False"]


def test_autocast_accepts_float32_as_cuda_does(tmp_path):
    # CPU autocast warns "not supported" at float32 and disables itself; CUDA prints nothing
    for mode in ("cuda", "cpu"):
        result = _run(tmp_path, """
            import torch
            model = torch.nn.Linear(4, 4).cuda()
            with torch.autocast("cuda", dtype=torch.float32):
                print(model(torch.ones(2, 4, device="cuda")).dtype)
        """, mode=mode)
        assert _lines(result) == ["torch.float32"], mode
        assert "autocast" not in result.stderr.lower(), mode


def test_warnings_name_the_users_line_not_the_simulators(tmp_path):
    for mode in ("cuda", "cpu"):
        result = _run(tmp_path, """
            import torch
            import torch.nn.functional as F
            x = torch.ones(3, device="cuda")
            y = torch.tensor(x)
            z = F.softmax(torch.ones(2, 3, device="cuda"))
        """, mode=mode)
        assert result.ok
        lines = [line for line in result.stderr.splitlines() if "UserWarning" in line]
        assert [line.split(": UserWarning")[0] for line in lines] == [
            f"{tmp_path / 'prog.py'}:5", f"{tmp_path / 'prog.py'}:6"], mode


def test_a_program_ending_in_os_exit_or_using_the_gpu_only_in_a_fork_did_use_it(tmp_path):
    ends_in_exit = _run(tmp_path, """
        import os, torch
        print(torch.ones(2, device="cuda").sum().item(), flush=True)
        os._exit(0)
    """)
    assert ends_in_exit.usage > 0
    only_the_child = _run(tmp_path, """
        import os, torch
        pid = os.fork()
        if pid == 0:
            torch.ones(2, device="cuda")
            os._exit(0)
        os.waitpid(pid, 0)
    """)
    assert only_the_child.usage > 0


def test_a_program_that_never_touches_the_gpu_still_reads_as_such(tmp_path):
    result = _run(tmp_path, """
        import os, torch
        torch.ones(2)
        os._exit(0)
    """)
    assert result.usage == 0


def test_the_cpu_build_mode_makes_a_cuda_wheel_say_what_a_cpu_only_build_says(tmp_path):
    # On the CPU wheel the mode changes nothing; a CUDA wheel has the entry points it hides,
    # given to the CPU wheel here so that the mode has something to hide.
    result = _run(tmp_path, """
        import torch
        from samedevice.sim import _cpu_build
        torch._C._cuda_getDeviceCount = lambda: 0
        torch._C._has_cuda = True
        torch.version.cuda = "13.0"
        assert _cpu_build.is_cuda_build()
        _cpu_build.enable()
        print(torch.cuda.is_available(), torch.backends.cuda.is_built(), torch.version.cuda)
        try:
            torch.zeros(1).to("cuda")
        except AssertionError as e:
            print(e)
    """, mode="cpu-build")
    assert _lines(result) == ["False False None", "Torch not compiled with CUDA enabled"]


def test_accelerator_device_index_makes_a_gpu_current_in_both_runs(tmp_path):
    body = """
        import torch
        with torch.accelerator.device_index(1):
            print(torch.accelerator.current_device_index(), torch.cuda.current_device())
        print(torch.accelerator.current_device_index())
    """
    for mode in ("cuda", "cpu"):
        assert _lines(_run(tmp_path, body, mode=mode, SAMEDEVICE_GPUS="2")) == ["1 1", "0"], mode


def test_dynamos_current_stream_is_answered_in_the_cpu_reference_run(tmp_path):
    # torch 2.15's compiled code and guards read the current stream through this C++ function,
    # which asks the CUDA runtime: on a CUDA wheel without a driver, AcceleratorError. The CPU
    # wheel has no such function; the child gives it one that fails as the CUDA wheel's does.
    result = _run(tmp_path, """
        import torch, torch._dynamo.utils
        from samedevice.sim import _accelerator

        def cuda_wheels(device):
            if torch.device(device).type == "cuda":
                raise torch.AcceleratorError("CUDA error: CUDA driver version is insufficient")
            return "the CPU stream"

        torch._C._dynamo.utils.get_current_stream = cuda_wheels
        torch._dynamo.utils.get_current_stream = cuda_wheels   # imported before, as in a warm worker
        _accelerator._answer_dynamo_current_stream(lambda: torch.cuda)
        for get in (torch._C._dynamo.utils.get_current_stream, torch._dynamo.utils.get_current_stream):
            stream = get(torch.device("cuda"))
            print(stream == torch.cuda.current_stream(), stream.device, get(torch.device("cpu")))
    """, mode="cpu")
    assert _lines(result) == ["True cuda:0 the CPU stream"] * 2


def test_the_autocast_state_for_cuda_follows_the_block_in_both_runs(tmp_path):
    # Hugging Face models ask torch.is_autocast_enabled("cuda") inside the block; it said False,
    # and get_autocast_dtype("cuda") said float16 under a bfloat16 block. On CUDA both follow it,
    # and autocast("cuda") without a dtype is float16 (the CPU reference run's CPU default was
    # bfloat16).
    body = """
        import torch
        a = torch.ones(4, 4, device="cuda")
        print(torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda"))
        with torch.autocast("cuda", dtype=torch.bfloat16):
            print(torch.is_autocast_enabled("cuda"), torch.is_autocast_enabled(),
                  torch.get_autocast_dtype("cuda"), (a @ a).dtype)
        with torch.autocast("cuda"):
            print(torch.get_autocast_gpu_dtype(), (a @ a).dtype)
        print(torch.is_autocast_enabled("cuda"), torch.is_autocast_enabled("cpu"))
    """
    for mode in ("cuda", "cpu"):
        assert _lines(_run(tmp_path, body, mode=mode)) == [
            "False torch.float16",
            "True True torch.bfloat16 torch.bfloat16",
            "torch.float16 torch.float16",
            "False False",
        ], mode

