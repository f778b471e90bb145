"""CUDA's fork rule on the simulated machine (issue 10).

A process that initialised CUDA and then forks leaves its child unable to use CUDA: the child
is "in a bad fork" and its first lazy initialisation raises PyTorch's ``Cannot re-initialize
CUDA in forked subprocess`` (torch/cuda/__init__.py, ``_lazy_init``). A fork before any CUDA use
works, and so does a 'spawn' child. The programs run as ``samedevice run`` runs them, in the
warm interpreter that ``verify`` uses, whose own forks must stay fresh processes.
"""

from __future__ import annotations

import os
import textwrap

import pytest

from samedevice.sim._fork import REINIT
from samedevice.sim.warm import WarmRunner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def warm():
    with WarmRunner() as runner:
        yield runner


def _program(tmp_path, name: str, source: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


# a forked child reports on itself through its exit status and one line of output
_CHILD = """
import os
import torch


def in_child(fn):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            fn()
        except RuntimeError as e:
            print("raised:", e, flush=True)
            code = 3
        os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
"""


def test_a_child_forked_after_cuda_use_cannot_initialise_cuda(warm, tmp_path):
    program = _program(tmp_path, "after_use.py", _CHILD + """
x = torch.ones(2, device="cuda")
print("parent initialised:", torch.cuda.is_initialized(), flush=True)


def child():
    print("child:", torch.cuda._is_in_bad_fork(), torch.cuda.is_initialized(), flush=True)
    torch.zeros(1, device="cuda")


print("status:", in_child(child), flush=True)
print("parent:", torch.cuda._is_in_bad_fork(), (x + 1).tolist())
""")
    result = warm.run(program, "cuda")
    assert result.ok, result.stderr
    assert result.stdout == ("parent initialised: True\nchild: True False\n"
                             f"raised: {REINIT}\nstatus: 3\nparent: False [2.0, 2.0]\n")


@pytest.mark.parametrize("call", ["x.to('cuda')", "x.cuda()", "torch.tensor([1.0], device='cuda')",
                                  "torch.cuda.current_device()", "torch.cuda.set_device(0)",
                                  "torch.cuda.synchronize()", "torch.cuda.get_device_name()",
                                  "torch.cuda.init()", "torch.nn.Linear(2, 2).to('cuda')"])
def test_each_way_of_initialising_cuda_raises_in_a_bad_fork(warm, tmp_path, call):
    program = _program(tmp_path, "ways.py", _CHILD + f"""
torch.ones(1, device="cuda")
x = torch.ones(1)
print(in_child(lambda: {call}))
""")
    result = warm.run(program, "cuda")
    assert result.ok and result.stdout == f"raised: {REINIT}\n3\n", result.stderr


def test_what_does_not_initialise_cuda_works_in_a_bad_fork(warm, tmp_path):
    """``is_available``/``device_count`` do not initialise; ``torch.manual_seed`` skips CUDA in a
    bad fork (as DataLoader workers call it); memory statistics are only read."""
    program = _program(tmp_path, "harmless.py", _CHILD + """
torch.ones(1, device="cuda")


def child():
    print(torch.cuda.is_available(), torch.cuda.device_count(), flush=True)
    torch.manual_seed(0)
    print(torch.randn(1).shape, flush=True)


print(in_child(child))
""")
    result = warm.run(program, "cuda")
    assert result.ok and result.stdout == "True 1\ntorch.Size([1])\n0\n", result.stderr


def test_a_fork_before_any_cuda_use_works_and_is_available_poisons_as_on_cuda(warm, tmp_path):
    """Forking first is fine; ``device_count()`` (NVML) touches nothing, but ``is_available()``
    calls the CUDA runtime and so registers PyTorch's fork handler, unless
    ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` (as test_cuda_nvml_based_avail.py pins on CUDA)."""
    program = _program(tmp_path, "before.py", _CHILD + """
def child():
    print(torch.cuda._is_in_bad_fork(), torch.ones(1, device="cuda").device, flush=True)


print(in_child(child), flush=True)
torch.cuda.device_count()
print(in_child(child), flush=True)
torch.cuda.is_available()
print(in_child(lambda: print(torch.cuda._is_in_bad_fork(), flush=True)), flush=True)
""")
    result = warm.run(program, "cuda")
    assert result.ok and result.stdout == "False cuda:0\n0\nFalse cuda:0\n0\nTrue\n0\n", result.stderr
    nvml = warm.run(program, "cuda", extra_env={"PYTORCH_NVML_BASED_CUDA_CHECK": "1"})
    assert nvml.ok and nvml.stdout == "False cuda:0\n0\nFalse cuda:0\n0\nFalse\n0\n", nvml.stderr


_POOL = """
import multiprocessing as mp

import torch


def total(n):
    return torch.ones(n, device="cuda").sum().item()


if __name__ == "__main__":
    print(total(2), flush=True)
    with mp.get_context("{method}").Pool(1) as pool:
        print(pool.map(total, [3]))
"""


def test_a_fork_pool_raises_cudas_error_in_the_parent_and_spawn_works(warm, tmp_path):
    fork = warm.run(_program(tmp_path, "pool_fork.py", _POOL.format(method="fork")), "cuda")
    assert fork.returncode == 1
    assert (fork.exception["type"], fork.exception["message"]) == ("RuntimeError", REINIT)
    assert fork.stderr.rstrip().endswith(f"RuntimeError: {REINIT}")
    assert "samedevice" not in fork.stderr  # CUDA's traceback: no simulator frames
    spawn = warm.run(_program(tmp_path, "pool_spawn.py", _POOL.format(method="spawn")), "cuda")
    assert spawn.ok and spawn.stdout == "2.0\n[3.0]\n", spawn.stderr
    # the plain-CPU reference run has no CUDA to poison: every fork works
    cpu = warm.run(_program(tmp_path, "pool_cpu.py", _POOL.format(method="fork")), "cpu")
    assert cpu.ok and cpu.stdout == "2.0\n[3.0]\n", cpu.stderr


def test_dataloader_workers_forked_after_cuda_use_raise_cudas_error(warm, tmp_path):
    program = _program(tmp_path, "loader.py", """
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Frames(Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return torch.full((2,), float(i), device="cuda")


        model = torch.nn.Linear(2, 1).cuda()
        for batch in DataLoader(Frames(), batch_size=2, num_workers=2):
            print(model(batch))
    """)
    result = warm.run(program, "cuda")
    assert result.returncode == 1
    # the loader re-raises the worker's error with the worker's traceback in its message; the
    # error a case documents is the worker's own (its last line), as for a spawned rank's
    wrapped = result.record["exception"]
    assert wrapped["type"] == "RuntimeError"
    assert wrapped["message"].startswith("Caught RuntimeError in DataLoader worker process 0.\n"
                                         "Original Traceback (most recent call last):\n")
    assert wrapped["message"].rstrip().endswith(f"RuntimeError: {REINIT}")
    assert "samedevice" not in wrapped["message"]
    assert (result.exception["type"], result.exception["message"]) == ("RuntimeError", REINIT)
    # the same loader in the main process (num_workers=0) works
    fixed = warm.run(_program(tmp_path, "loader0.py", program.read_text().replace("num_workers=2",
                                                                                  "num_workers=0")), "cuda")
    assert fixed.ok and fixed.stdout.count("grad_fn") == 2, fixed.stderr


def test_the_warm_workers_children_are_fresh_processes(warm, tmp_path):
    """``verify`` forks each program from one warm interpreter: a program that ran after one
    that used CUDA and forked is no bad fork."""
    first = warm.run(_program(tmp_path, "first.py", _CHILD + """
torch.ones(1, device="cuda")
print(in_child(lambda: torch.ones(1, device="cuda")))
"""), "cuda")
    assert first.ok and first.stdout == f"raised: {REINIT}\n3\n", first.stderr
    second = warm.run(_program(tmp_path, "second.py", """
        import torch
        print(torch.cuda._is_in_bad_fork(), torch.cuda.is_initialized(), torch.ones(1, device="cuda").device)
    """), "cuda")
    assert second.ok and second.stdout == "False False cuda:0\n", second.stderr


def test_becoming_a_warm_child_resets_the_fork_state(tmp_path):
    """Even a worker that had touched CUDA (it never does) hands its children a clean state."""
    from samedevice.sim import _fork, _warm_worker

    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            _fork.STATE.initialized = _fork.STATE.armed = _fork.STATE.in_bad_fork = True
            _warm_worker._become_child({"stdout": str(out), "stderr": str(err), "cwd": str(tmp_path),
                                        "env": {}})
            print(_fork.is_in_bad_fork(), _fork.is_initialized(), _fork.STATE.armed, flush=True)
            code = 0
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, err.read_text()
    assert out.read_text() == "False False False\n"


def test_a_dataloader_workers_error_is_the_one_a_case_documents():
    from samedevice.sim.runner import is_wrapped, rank_exception

    worker = ("Caught RuntimeError in DataLoader worker process 1.\nOriginal Traceback (most recent call last):\n"
              '  File "loader.py", line 9, in __getitem__\n    x = torch.ones(1, device="cuda")\n'
              f"RuntimeError: {REINIT}\n")
    assert is_wrapped("RuntimeError", worker) and rank_exception(worker) == ("RuntimeError", REINIT)
    # DataParallel's replicas run in threads of the same process: their message stays whole
    replica = "Caught RuntimeError in replica 0 on device 0.\nOriginal Traceback (most recent call last):\n"
    assert not is_wrapped("RuntimeError", replica)


def test_a_process_pool_executor_worker_counts_as_using_the_gpu(warm, tmp_path):
    """A parent that only initialised CUDA (``get_device_name``) and a forked worker whose first
    GPU call fails: the run used the simulated GPU (``verify`` rejects runs that never did), and
    the worker's traceback, re-raised by ``future.result()``, has no simulator frames."""
    program = _program(tmp_path, "executor.py", """
        from concurrent.futures import ProcessPoolExecutor

        import torch


        def caption():
            return torch.nn.Linear(2, 2).to("cuda").weight.sum().item()


        if __name__ == "__main__":
            print(torch.cuda.get_device_name(0))
            with ProcessPoolExecutor(1) as executor:
                executor.submit(caption).result()
    """)
    result = warm.run(program, "cuda")
    assert (result.exception["type"], result.exception["message"]) == ("RuntimeError", REINIT)
    assert result.usage == 1
    assert "concurrent.futures.process._RemoteTraceback" in result.stderr
    assert "samedevice" not in result.stderr
