"""Hogwild training as pytorch/examples' mnist_hogwild writes it: the model is made on the GPU,
``model.share_memory()``, and spawned processes train it in place.

The workers run one after the other here (Hogwild's concurrent updates race, and the test
compares two runs exactly). Run by ``test_ipc.py`` under ``samedevice run`` and ``--cpu``:
the parent prints the weights the workers trained, which only shared memory gives it."""
import sys

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn


def train(rank: int, model: nn.Module, device: torch.device) -> None:
    torch.manual_seed(rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(8, 4, device=device)
        y = torch.randint(0, 3, (8,), device=device)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    mp.set_start_method("spawn", force=True)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    model.share_memory()
    before = model[0].weight.detach().clone()
    for rank in range(2):
        p = mp.Process(target=train, args=(rank, model, device))
        p.start()
        p.join()
        assert p.exitcode == 0, p.exitcode
    moved = (model[0].weight.detach() - before).abs().sum().item()
    weights = [round(v, 5) for v in model[2].weight.detach().cpu().flatten().tolist()]
    sys.stdout.write(f"moved {moved > 0} {weights} shared {model[0].weight.is_shared()}\n")
