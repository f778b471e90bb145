"""Names taken from the caller's source, and a walk over a large model (its speed: benchmarks/audit_speed.py)."""

from __future__ import annotations

import sys

import torch
from torch import nn

from samedevice import audit
from samedevice.auditing._names import argument_names


def test_names_come_from_the_call_text():
    model, batches = nn.Linear(2, 2), [{"x": torch.ones(1)}]
    report = audit(
        model,
        batches[0],
    )
    assert report.roots == ["model", "batches[0]"]


def test_starred_arguments_fall_back_to_variable_names():
    model, opt_state = nn.Linear(2, 2), {"m": torch.ones(1)}
    things = (model, opt_state)
    assert audit(*things).roots == ["model", "opt_state"]


def names(*objects: object) -> list[str]:
    """What audit and locate do: name the arguments from the caller's frame."""
    return argument_names(sys._getframe(1), objects)


def test_unnamed_objects_are_numbered_and_repeats_kept_apart():
    assert argument_names(None, (1, 2)) == ["arg0", "arg1"]
    a = object()
    assert names(a, a) == ["a", "a#2"]
    assert names(a, object()) == ["a", "arg1"]


def test_keywords_and_positionals_together():
    model = nn.Linear(2, 2)
    assert audit(model, labels=torch.ones(1)).roots == ["model", "labels"]


def test_audit_walks_a_thousand_module_meta_model():
    with torch.device("meta"):
        model = nn.Sequential(*[nn.Sequential(nn.Linear(448, 448), nn.LayerNorm(448), nn.Linear(448, 448))
                                for _ in range(250)])
    assert sum(1 for _ in model.modules()) == 1001
    report = audit(model)  # how fast: benchmarks/audit_speed.py (0.5 s budget), not a timed test
    assert report.tensors == 1500
    assert not report
