"""Which device audit holds tensors to when it is not told: inferred, or plainly unknown."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from samedevice import assert_on_device, audit


class CenterOnly(nn.Module):
    """A parameterless loss whose only tensor is a plain attribute (lightly's DINOLoss shape)."""

    def __init__(self) -> None:
        super().__init__()
        self.center = torch.zeros(1, 8)


def test_no_parameters_and_everything_on_cpu_is_not_nothing_misplaced():
    loss_fn = CenterOnly()
    report = audit(loss_fn=loss_fn)
    assert not report.judged and not report
    assert str(report) == (
        "samedevice.audit: no reference device: no parameters in loss_fn, and its 1 tensor is on "
        "cpu (a CPU run and a model never moved look the same); pass device= (e.g. "
        'device="cuda") to check it against yours.')
    assert "Nothing misplaced" not in str(report) and "Nothing misplaced" not in report._repr_html_()
    assert report.to_dict()["judged"] is False


def test_passing_device_judges_it(acc):
    report = audit(loss_fn=CenterOnly(), device=acc)
    assert report.judged
    assert [(f.path, f.device, f.family) for f in report.findings] == [("loss_fn.center", "cpu", "F2")]


def test_a_tensor_on_an_accelerator_is_the_reference_without_parameters(acc):
    loss_fn = CenterOnly()
    loss_fn.register_buffer("moved", torch.zeros(1, 8, device=acc))
    report = audit(loss_fn=loss_fn)
    assert report.judged and report.expected == str(acc)
    assert [(f.path, f.device) for f in report.findings] == [("loss_fn.center", "cpu")]


def test_parameters_on_the_cpu_are_a_reference():
    report = audit(model=nn.Linear(2, 2))
    assert report.judged and report.expected == "cpu"
    assert str(report).endswith("Nothing misplaced.")


def test_assert_on_device_refuses_to_pass_without_a_reference():
    with pytest.raises(AssertionError, match=r"no reference device: .*pass device="):
        assert_on_device(loss_fn=CenterOnly())
    assert_on_device(loss_fn=CenterOnly(), device="cpu")
