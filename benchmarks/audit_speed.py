"""How long ``samedevice.audit`` takes on a large model: 1,000 modules, ~100M parameters.

The model is built on the ``meta`` device, so it costs no memory and the figure is the walk
alone. Budget: 0.5 s. Run: ``.venv/bin/python benchmarks/audit_speed.py``.
"""

from __future__ import annotations

import statistics
import sys
import time

import torch
from torch import nn

import samedevice

BUDGET_S = 0.5
WIDTH = 448  # 250 blocks of two WIDTH x WIDTH linears: ~100M parameters


def build() -> nn.Module:
    with torch.device("meta"):
        blocks = [nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.LayerNorm(WIDTH), nn.Linear(WIDTH, WIDTH))
                  for _ in range(250)]
        model = nn.Sequential(*blocks)
    model.stray = torch.zeros(WIDTH)  # one misplaced plain attribute, so there is a finding
    return model


def main() -> int:
    model = build()
    modules = sum(1 for _ in model.modules())
    params = sum(p.numel() for p in model.parameters())
    times = []
    for _ in range(7):
        start = time.perf_counter()
        report = samedevice.audit(model)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"audit of {modules:,} modules, {params / 1e6:.1f}M parameters on meta: "
          f"median {median:.3f} s over {len(times)} runs (min {min(times):.3f} s), budget {BUDGET_S} s")
    print(f"found {len(report.findings)} misplaced of {report.tensors:,} tensors")
    return 0 if median <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
