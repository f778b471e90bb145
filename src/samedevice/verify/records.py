"""Verification records: ``cases/<slug>.verified.json``, one latest record per device and torch.

Written by ``samedevice verify --record`` (CPU runners: ``device = "sim"``; the GPU tier:
``device = "cuda"`` with the GPU model). The case page's "Last verified" line, the
Verification page and ``samedevice cases --json`` read them through ``Case.records()``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from samedevice.cases import Case, read_json_object


def add_record(case: Case, record: dict[str, Any]) -> Path:
    """Add ``record`` to the case's file, replacing the one for the same device, torch and GPU.
    A file that does not read raises CaseError and is left as it is: its records are the
    user's, and only they can say what it should hold."""
    path = case.record_path
    case.records()  # the same checks as every reader: a one-line CaseError, nothing written
    data = read_json_object(path) or {"records": []}
    kept = [
        r for r in data.get("records", [])
        if (r.get("device"), r.get("torch"), r.get("gpu")) != (record["device"], record["torch"], record["gpu"])
    ]
    kept.append(record)
    kept.sort(key=lambda r: (r.get("date", ""), r.get("device", ""), r.get("torch", "")), reverse=True)
    data = {"case": case.slug, "records": kept}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)
    return path
