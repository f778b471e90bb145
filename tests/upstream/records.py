"""The upstream tier's record of a case: ``cases/<slug>.upstream.json``.

Written by ``pytest -m upstream`` when every release of the case behaved as expected (so each
result's ``observed`` equals its ``expected``); a failing run leaves the previous record alone.
Set ``SAMEDEVICE_UPSTREAM_RECORD=0`` to run the tier without writing. The case pages show it
under "Affected versions", and ``samedevice.cases.Case.upstream_record()`` returns it.

Schema (one JSON object; keys in this order)::

    {
      "case": "lightly-dino-loss-center",      # the case slug
      "date": "2026-11-22",                    # ISO date (UTC) of the run
      "torch": "2.13.0+cpu",                   # torch.__version__ the releases ran with
      "python": "3.11.7",
      "device": "sim",                         # "cuda" mapped to the simulated accelerator
      "package": "lightly",                    # the PyPI distribution
      "how": "`lightly.loss.DINOLoss(...)` ...",  # the real code path run (Markdown)
      "driver": "tests/upstream/drivers/lightly-dino-loss-center.py",
      "requirements": ["torchvision==0.28.0", "pillow==11.3.0"],  # pinned extras, every release
      "results": [                             # releases in version order, oldest first
        {"version": "1.5.10", "expected": "pass", "observed": "pass"},
        {"version": "1.5.11", "expected": "fail", "observed": "fail",
         "exception": "RuntimeError",          # "exception" and "message": failures only
         "message": "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"},
        {"version": "1.5.12", "expected": "pass", "observed": "pass"}
      ]
    }

``expected``/``observed`` are "pass" (ran to the end and used the accelerator) or "fail"
(raised the case's documented exception with its exact message, from a frame inside the
installed release).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from collections.abc import Sequence
from pathlib import Path

from samedevice.cases import Case
from tests.upstream.harness import DRIVERS, Observation
from tests.upstream.releases import UpstreamCase


def recording_enabled() -> bool:
    return os.environ.get("SAMEDEVICE_UPSTREAM_RECORD", "1").strip().lower() not in ("0", "false", "no", "off")


def build_record(case: Case, spec: UpstreamCase, observations: Sequence[Observation],
                 torch_version: str) -> dict:
    driver = DRIVERS / spec.driver
    return {
        "case": case.slug,
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "torch": torch_version,
        "python": platform.python_version(),
        "device": "sim",
        "package": spec.package,
        "how": spec.how,
        "driver": driver.relative_to(case.root).as_posix() if driver.is_relative_to(case.root) else driver.name,
        "requirements": list(spec.requirements),
        "results": [o.to_record() for o in observations],
    }


def write_record(case: Case, record: dict) -> Path:
    path = case.upstream_record_path
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
