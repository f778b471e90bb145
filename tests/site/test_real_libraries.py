"""The "Run your GPU code on a CPU" page shows what the upstream tier's library run recorded."""

from __future__ import annotations

import json
from pathlib import Path

from samedevice.site.generated import LIBRARIES_RECORD, real_libraries_table


def test_the_table_shows_each_recorded_library(tmp_path: Path) -> None:
    record = {"date": "2026-11-24", "torch": "2.13.0+cpu", "python": "3.11.7", "device": "sim",
              "command": "pytest -m upstream tests/upstream/test_libraries.py",
              "libraries": [{"library": "timm", "version": "1.0.31", "driver": "tests/upstream/drivers/lib-timm.py",
                             "simulated_tensors": 500, "compared_values": 2,
                             "bug": "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same"}]}
    path = tmp_path / LIBRARIES_RECORD
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record), encoding="utf-8")
    table = real_libraries_table(tmp_path)
    assert table.startswith("Recorded 2026-11-24 with PyTorch 2.13.0+cpu")
    row = next(line for line in table.splitlines() if "`timm` 1.0.31" in line)
    assert "`lib-timm.py`" in row and "| 500 | 2 |" in row and "weight type (torch.cuda.FloatTensor)" in row


def test_without_a_record_the_page_says_how_to_make_one(tmp_path: Path) -> None:
    assert "pytest -m upstream tests/upstream/test_libraries.py" in real_libraries_table(tmp_path)
