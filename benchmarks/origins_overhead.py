"""What remembering where each CPU tensor was made costs (issue 25: creation tracking <= 15%).

Under ``samedevice run`` the "cuda" alias sees every torch call of the program and hands each
CPU result to ``sim._origins.note`` (the diagnosis reads it back). This measures two workloads
with the alias on, alternately with the tracking and with ``note`` replaced by a no-op, in this
one process (ratios from runs side by side; the machines are noisy):

* training: a 64 -> 256 -> 10 MLP on the simulated GPU, batches made on the CPU each step and
  moved (the usual shape of a training loop);
* CPU-heavy: small tensors made and combined on the CPU in a loop (data preparation; every
  result is a CPU tensor, the worst case for the tracking);
* sim-overhead tiny / big: the two training workloads of ``sim_overhead.py`` (the benchmark the
  issue's goal names), on the "cuda" the alias answers to.

    .venv/bin/python benchmarks/origins_overhead.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import torch
from torch import nn

from samedevice import sim
from samedevice.sim import _origins

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sim_overhead  # (its workloads, measured here with and without the tracking)


def training() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)).to("cuda")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(30):
        x = torch.randn(128, 64).to("cuda")
        y = torch.randint(0, 10, (128,)).to("cuda")
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


def cpu_heavy() -> None:
    total = torch.zeros(())
    for i in range(3000):
        a = torch.arange(16, dtype=torch.float32)
        b = (a * i).unsqueeze(0)[:, :8]
        total = total + b.sum()


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    sim.enable(alias_cuda=True)
    real = _origins.note

    def off(args: tuple, result: object) -> None:
        return None

    print(f"{'workload':<18} {'tracked s':>10} {'untracked s':>12} {'ratio':>7}")
    cuda = torch.device("cuda")
    workloads = (("training", training), ("cpu-heavy", cpu_heavy),
                 ("sim-overhead tiny", lambda: sim_overhead.tiny(cuda)),
                 ("sim-overhead big", lambda: sim_overhead.big(cuda, 10)))
    for name, fn in workloads:
        fn()  # warm up both paths
        on, untracked = [], []
        for _ in range(args.repeats):
            _origins.note = real
            on.append(timed(fn))
            _origins.note = off
            untracked.append(timed(fn))
        _origins.note = real
        a, b = statistics.median(on), statistics.median(untracked)
        print(f"{name:<18} {a:>10.4f} {b:>12.4f} {a / b:>6.2f}x")
    print("goal (issue 25): ratio <= 1.15 on the sim-overhead workloads; cpu-heavy is the worst case, "
          "reported beside them")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
