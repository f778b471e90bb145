"""What ``samedevice.locate`` costs when nothing fails: a small training step, with and without.

Both variants run side by side in one process, alternating, so machine noise hits them
alike; each repetition times a batch of steps and the figure is the ratio of the medians.
Run: ``.venv/bin/python benchmarks/locate_overhead.py [--device cuda|sim] [--reps N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

import samedevice


def make_step(device: torch.device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    batch = {"x": torch.randn(64, 32, device=device), "y": torch.randint(0, 10, (64,), device=device)}

    def step() -> None:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(batch["x"]), batch["y"])
        loss.backward()
        optimizer.step()

    return step, (model, optimizer, batch)


def timed(step, context, steps: int, device: torch.device) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        with context():
            step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps


class _PassThrough(TorchFunctionMode):
    """The floor: a mode that does nothing costs this much (locate's mode does nearly nothing)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class _Count(TorchFunctionMode):
    calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        _Count.calls += 1
        return func(*args, **(kwargs or {}))


def calls_per_step(step) -> int:
    """Torch API calls one step makes: the mode's cost is paid once per call."""
    _Count.calls = 0
    with _Count():
        step()
    return _Count.calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda, or sim")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(1)
    device = samedevice.sim.enable() if args.device == "sim" else torch.device(args.device)
    step, objects = make_step(device)
    model, optimizer, batch = objects

    def located():
        return samedevice.locate(model, optimizer, batch)

    for _ in range(10):  # warm-up: allocator, lazy optimizer state
        step()
    plain, with_locate, floor = [], [], []
    for _ in range(args.reps):
        plain.append(timed(step, contextlib.nullcontext, args.steps, device))
        with_locate.append(timed(step, located, args.steps, device))
        floor.append(timed(step, _PassThrough, args.steps, device))
    p, w, f = statistics.median(plain), statistics.median(with_locate), statistics.median(floor)
    print(f"small training step on {device} (MLP 32-64-64-10, batch 64, Adam), "
          f"median of {args.reps} x {args.steps} steps:")
    print(f"  without locate {p * 1e6:8.0f} us/step")
    print(f"  with locate    {w * 1e6:8.0f} us/step")
    calls = calls_per_step(step)
    print(f"  overhead ratio {w / p:.2f}x  ({(w - p) / calls * 1e6:.1f} us per torch API call, "
          f"{calls} calls per step)")
    print(f"  (an empty TorchFunctionMode, measured alongside: {f / p:.2f}x)")


if __name__ == "__main__":
    main()
