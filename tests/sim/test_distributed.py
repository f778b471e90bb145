"""torch.distributed on the simulated accelerator: DDP works, a CPU tensor in a collective fails
with c10d's own message, as in an NCCL-only group."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from tests.sim import dist_programs

pytestmark = pytest.mark.slow


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path: Path, device_kind: str, bug: bool) -> list[dict | str]:
    mp.spawn(dist_programs.ddp_training, args=(_port(), device_kind, str(tmp_path), bug), nprocs=2)
    results = []
    for rank in range(2):
        err = tmp_path / f"rank{rank}.err"
        results.append(err.read_text() if err.exists() else torch.load(tmp_path / f"rank{rank}.pt"))
    return results


def test_cpu_tensor_in_a_collective_fails_with_c10ds_message(tmp_path):
    results = _run(tmp_path, "cuda", bug=True)
    assert results == ["RuntimeError: No backend type associated with device type cpu"] * 2


def test_ddp_on_two_simulated_ranks_matches_gloo_on_the_cpu(tmp_path):
    sim_dir, cpu_dir = tmp_path / "sim", tmp_path / "cpu"
    sim_dir.mkdir()
    cpu_dir.mkdir()
    sim, cpu = _run(sim_dir, "cuda", bug=False), _run(cpu_dir, "cpu", bug=False)
    for rank in range(2):
        assert isinstance(sim[rank], dict), sim[rank]
        torch.testing.assert_close(sim[rank], cpu[rank])
    torch.testing.assert_close(sim[0]["weight"], sim[1]["weight"])  # DDP kept ranks in step
    assert sim[0]["count"].item() == 16


def test_ddp_copies_an_input_from_another_gpu_onto_its_module_as_on_cuda(tmp_path):
    mp.spawn(dist_programs.ddp_input_on_another_gpu, args=(_port(), str(tmp_path)), nprocs=2)
    assert [(tmp_path / f"rank{r}.out").read_text() for r in range(2)] == ["cuda:0", "cuda:1"]
    assert not (tmp_path / "rank0.err").exists()
    assert (tmp_path / "rank1.err").read_text() == (
        "RuntimeError: Expected all tensors to be on the same device, but got target is on cuda:0, "
        "different from other tensors on cuda:1 (when checking argument in method wrapper_CUDA_nll_loss_forward)")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
@pytest.mark.parametrize("teardown", ["destroy", "exit"])
def test_gloos_threads_stop_when_the_group_is_torn_down(tmp_path, teardown):
    # Left to interpreter finalization, Gloo's threads aborted about one rank in a hundred
    # ("terminate called without an active exception"); DDP keeps the group referenced.
    # "exit": a program that never calls destroy_process_group is covered by an exit hook.
    mp.spawn(dist_programs.threads_after_teardown, args=(_port(), str(tmp_path), teardown), nprocs=1)
    err = tmp_path / "rank0.err"
    assert not err.exists(), err.read_text()
    # only Gloo's own threads are compared: Python helper threads come and go on their own
    result = torch.load(tmp_path / "rank0.pt")
    before, running, after = result["threads"]
    assert [t for t in before if "gloo" in t] == []
    assert [t for t in running if "gloo" in t] == ["gloo_tcp_loop", "pt_gloo_runloop", "pt_gloo_runloop"]
    assert [t for t in after if "gloo" in t] == []
    # using the group afterwards is a one-line error, not an AttributeError on a released Gloo
    assert result["late"] == "simgloo process group was destroyed (destroy_process_group)"


def test_integer_averages_and_object_collectives_work_as_on_nccl(tmp_path):
    mp.spawn(dist_programs.nccl_semantics, args=(_port(), "cuda", str(tmp_path), False), nprocs=2)
    for rank in range(2):
        assert not (tmp_path / f"rank{rank}.err").exists(), (tmp_path / f"rank{rank}.err").read_text()
        result = torch.load(tmp_path / f"rank{rank}.pt", weights_only=False)
        assert result["counts"].tolist() == [3, 5]  # (3 + 4) // 2, (0 + 10) // 2
        assert result["object"] == {"rank": 0}


def test_fsdp_on_one_simulated_rank_trains_as_the_plain_model_on_the_cpu(tmp_path):
    # FSDP's pre-backward hook checks the gradients' device: it runs inside backward, and
    # must see cuda:0 there as on a GPU (it aborted seeing sim:0)
    mp.spawn(dist_programs.fsdp_training, args=(_port(), str(tmp_path)), nprocs=1)
    err = tmp_path / "rank0.err"
    assert not err.exists(), err.read_text()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(3):
        loss = model(torch.randn(5, 4)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    torch.testing.assert_close(torch.load(tmp_path / "rank0.pt")["losses"], torch.tensor(losses))


def test_the_simulated_group_is_listed_as_recording_itself_for_torch_215s_flight_recorder(monkeypatch):
    # torch 2.15 attaches a FlightRecorder hook to every group whose backend is not in this
    # set; the hook asks the group for its name, which a group returned whole by a backend
    # creator does not have: init_process_group raised "ProcessGroup name not set".
    from torch.distributed import distributed_c10d

    from samedevice.sim import dist as sim_dist

    monkeypatch.setattr(distributed_c10d, "_FR_SELF_RECORDING_BACKENDS", {"nccl"}, raising=False)
    sim_dist._skip_flight_recorder()
    assert distributed_c10d._FR_SELF_RECORDING_BACKENDS == {"nccl", sim_dist.NAME, sim_dist.REFERENCE_NAME}


def test_ddp_with_device_ids_runs_in_the_cpu_reference_run_as_on_the_simulated_gpus():
    # DDP refuses device_ids for a CPU module; in `--cpu` the rank's GPU is the CPU. The
    # reference run's "nccl" is the simulated group over CPU tensors ("refgloo"): plain Gloo
    # left to interpreter finalization aborted a rank now and then ("terminate called without
    # an active exception", torch 2.15)
    import subprocess
    import sys

    program = Path(__file__).parent / "programs" / "_ddp_device_ids.py"
    printed = {}
    for mode, flags in (("sim", []), ("cpu", ["--cpu"])):
        proc = subprocess.run([sys.executable, "-m", "samedevice", "run", "--gpus", "2", *flags, str(program),
                               str(_port())], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        # DDP's logger warned "Time stats are currently only collected for CPU and CUDA devices"
        assert "Warning" not in proc.stderr, proc.stderr[-2000:]
        printed[mode] = sorted(proc.stdout.splitlines())
    assert len(printed["sim"]) == 2 and printed["sim"] == printed["cpu"]
