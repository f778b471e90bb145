"""data/common_identifiers.json is what benchmarks/common_identifiers.py makes: never edited by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import common_identifiers  # noqa: E402


def test_the_list_is_current():
    torch = pytest.importorskip("torch")
    stored = json.loads(common_identifiers.OUT.read_text(encoding="utf-8"))
    if torch.__version__.split("+")[0] != stored["torch"]:
        pytest.skip(f"made with torch {stored['torch']}; this is {torch.__version__}")
    assert common_identifiers.build() == stored, "run: python benchmarks/common_identifiers.py --write"


def test_the_list_holds_torch_names_and_shared_ones_but_no_case_of_its_own():
    names = set(json.loads(common_identifiers.OUT.read_text(encoding="utf-8"))["identifiers"])
    assert {"register_buffer", "index_select", "non_blocking", "in_features", "input_ids"} <= names
    # the seed projects' own code stays distinctive
    assert not {"extract_diff", "train_ram_plus", "dinoloss", "lr_find", "calc_loss_batch"} & names
