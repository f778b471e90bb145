"""How a driver tells the test what it did: one JSON object per line after a fixed prefix.

stdout also carries the library's own output (progress bars, Lightning's banners, several
ranks at once), so the test reads only lines that start with ``PREFIX``. Each line is written
with a single ``write`` call so that lines from several processes do not interleave.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from types import ModuleType
from typing import Any

import torch

PREFIX = "samedevice-upstream: "


def report(**facts: Any) -> None:
    sys.stdout.write(PREFIX + json.dumps(facts, sort_keys=True) + "\n")
    sys.stdout.flush()


def imported(module: ModuleType, distribution: str) -> None:
    """Which release was imported, and from where: the test checks that it is the one it
    installed (the throwaway folder) and that torch still comes from the project's venv."""
    report(event="imported", distribution=distribution,
           version=importlib.metadata.version(distribution),
           file=module.__file__, torch_file=torch.__file__)
