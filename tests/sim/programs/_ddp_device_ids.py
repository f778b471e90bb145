"""DDP as the tutorials write it: one process per GPU, ``DDP(model, device_ids=[rank])``.

Run by ``test_distributed.py`` under ``samedevice run --gpus 2`` and ``--cpu --gpus 2``, each
rank prints its trained weights; the two runs must print the same."""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def main(rank: int, world: int, port: str) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", port
    dist.init_process_group(backend="nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 2).to(rank), device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(rank)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(3, 4, device=rank)).square().sum().backward()
        opt.step()
    weights = [round(v, 6) for v in model.module.weight.detach().cpu().flatten().tolist()]
    sys.stdout.write(f"{rank} {weights}\n")  # one write: the two ranks share the pipe
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(2, sys.argv[1]), nprocs=2)
