"""Programs for the distributed scenarios, importable by spawned ranks."""

from __future__ import annotations

import atexit
import os

import torch
import torch.distributed as dist


def _enable_sim() -> None:
    from samedevice import sim

    sim.enable(alias_cuda=True, gpus=2)  # one simulated GPU per rank


def _setup(rank: int, port: int, device_kind: str, world_size: int = 2) -> torch.device:
    if device_kind == "cuda":
        _enable_sim()
        backend = "nccl"  # the simulated group takes NCCL's place under the alias
    else:
        backend = "gloo"
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend, rank=rank, world_size=world_size)
    return torch.device("cuda", rank) if device_kind == "cuda" else torch.device("cpu")


def ddp_training(rank: int, port: int, device_kind: str, out_dir: str, bug: bool) -> None:
    """Two DDP steps; the buggy variant syncs a CPU counter like Lightning's stale metric."""
    device = _setup(rank, port, device_kind)
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2).to(device)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        torch.manual_seed(rank)
        for _ in range(2):
            opt.zero_grad()
            ddp(torch.randn(8, 4, device=device)).pow(2).mean().backward()
            opt.step()
        count = torch.tensor(8) if bug else torch.tensor(8, device=device)
        dist.all_reduce(count)
        torch.save({"weight": model.weight.detach().cpu(), "bias": model.bias.detach().cpu(),
                    "count": count.cpu()}, os.path.join(out_dir, f"rank{rank}.pt"))
    except Exception as e:  # hand the exact text back to the test
        with open(os.path.join(out_dir, f"rank{rank}.err"), "w") as f:
            f.write(f"{type(e).__name__}: {e}")
    finally:
        dist.destroy_process_group()


def ddp_input_on_another_gpu(rank: int, port: int, out_dir: str) -> None:
    """Each rank feeds DDP (given its device_ids) a batch on cuda:0: DDP copies it onto the rank's own GPU (through a
    copy stream, as on CUDA), so the forward runs; a label left on cuda:0 then meets rank 1's
    output on cuda:1."""
    device = _setup(rank, port, "cuda")
    try:
        torch.manual_seed(0)
        ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2).to(device), device_ids=[rank])
        out = ddp(torch.randn(8, 4, device="cuda:0"))
        with open(os.path.join(out_dir, f"rank{rank}.out"), "w") as f:
            f.write(str(out.device))
        labels = torch.zeros(8, dtype=torch.long, device="cuda:0")
        torch.nn.functional.cross_entropy(out, labels)
    except Exception as e:
        with open(os.path.join(out_dir, f"rank{rank}.err"), "w") as f:
            f.write(f"{type(e).__name__}: {e}")
    finally:
        dist.destroy_process_group()


def nccl_semantics(rank: int, port: int, device_kind: str, out_dir: str, bug: bool) -> None:
    """What NCCL does that Gloo does not: integer averages; object collectives on the device."""
    device = _setup(rank, port, device_kind)
    try:
        counts = torch.tensor([3 + rank, 10 * rank], device=device)
        dist.all_reduce(counts, op=dist.ReduceOp.AVG)  # NCCL: sum, then integer division
        objects = [{"rank": rank}] if rank == 0 else [None]
        dist.broadcast_object_list(objects, src=0)
        torch.save({"counts": counts.cpu(), "object": objects[0]}, os.path.join(out_dir, f"rank{rank}.pt"))
    except Exception as e:
        with open(os.path.join(out_dir, f"rank{rank}.err"), "w") as f:
            f.write(f"{type(e).__name__}: {e}")
    finally:
        dist.destroy_process_group()


def fsdp_training(rank: int, port: int, out_dir: str) -> None:
    """Three FSDP steps on one rank (NO_SHARD). FSDP's pre-backward hook, run by the autograd
    engine, checks that the gradients are on its compute device, ``cuda:0``."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    _setup(rank, port, "cuda", world_size=1)
    try:
        torch.cuda.set_device(0)
        torch.manual_seed(0)
        model = FSDP(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for _ in range(3):
            loss = model(torch.randn(5, 4, device="cuda")).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        torch.save({"losses": torch.tensor(losses)}, os.path.join(out_dir, f"rank{rank}.pt"))
    except Exception as e:
        with open(os.path.join(out_dir, f"rank{rank}.err"), "w") as f:
            f.write(f"{type(e).__name__}: {e}")
    finally:
        dist.destroy_process_group()


def _threads() -> list[str]:
    """The names of this process's threads (Gloo's are gloo_tcp_loop and pt_gloo_runloop)."""
    names = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/comm") as f:
            names.append(f.read().strip())
    return sorted(names)


def threads_after_teardown(rank: int, port: int, out_dir: str, teardown: str) -> None:
    """The process's threads before the group, with it, and after its teardown:
    ``"destroy"`` (destroy_process_group) or ``"exit"`` (the exit hooks, as a program that
    never destroys its group reaches them)."""
    _enable_sim()
    threads = [_threads()]
    _setup(rank, port, "cuda", world_size=1)
    try:
        group = dist.group.WORLD
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2).cuda())
        model(torch.randn(3, 4, device="cuda")).sum().backward()
        del model
        probe = torch.ones(1, device="cuda")  # before teardown: the exit hooks also end the simulator
        threads.append(_threads())
        if teardown == "destroy":
            dist.destroy_process_group()
        else:
            atexit._run_exitfuncs()
        threads.append(_threads())
        try:  # a collective on the torn-down group, through a reference kept to it (as DDP keeps one)
            group.allreduce([probe])
            late = ""
        except RuntimeError as e:
            late = str(e)
        torch.save({"threads": threads, "late": late}, os.path.join(out_dir, f"rank{rank}.pt"))
    except Exception as e:
        with open(os.path.join(out_dir, f"rank{rank}.err"), "w") as f:
            f.write(f"{type(e).__name__}: {e}")
