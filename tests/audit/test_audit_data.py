"""audit on batches, explicit devices, names, and models spread over two accelerators."""

from __future__ import annotations

import types

import pytest
import torch
from torch import nn

import samedevice
from samedevice import audit


def test_unmoved_batch_entries_are_f3(acc):
    model = nn.Linear(4, 2).to(acc)
    batch = {"pixels": torch.ones(2, 4, device=acc), "mask": torch.ones(2, dtype=torch.bool)}
    report = audit(model, batch)
    assert [(f.path, f.device, f.dtype, f.family) for f in report.findings] == [
        ("batch['mask']", "cpu", "bool", "F3")]


def test_tuple_batches_and_bare_tensors(acc):
    model = nn.Linear(4, 2).to(acc)
    images, labels = torch.ones(2, 4, device=acc), torch.zeros(2, dtype=torch.long)
    report = audit(model, (images, labels), labels)
    assert [f.path for f in report.findings] == ["arg1[1]"]  # a tuple display is no name
    report = audit(model, labels)
    assert [f.path for f in report.findings] == ["labels"]


def test_keyword_arguments_name_the_objects(acc):
    loss = nn.Module()
    loss.weight_table = torch.ones(3)
    report = audit(model=nn.Linear(4, 2).to(acc), loss_fn=loss)
    assert [f.path for f in report.findings] == ["loss_fn.weight_table"]
    assert report.roots == ["model", "loss_fn"]


def test_attribute_expressions_name_the_root(acc):
    broken = types.SimpleNamespace(model=nn.Sequential(nn.Linear(4, 4)).to(acc))
    broken.model.out_head = nn.Linear(4, 2)
    report = samedevice.audit(
        broken.model,
    )
    assert [f.path for f in report.findings] == ["broken.model.out_head.weight", "broken.model.out_head.bias"]
    # A namespace of everything a program left behind (what case pages audit) works too.
    report = samedevice.audit(broken)
    assert report.findings[0].path == "broken.model.out_head.weight"
    assert report.findings[0].family == "F1"


def test_samedevice_audit_is_callable_every_time(acc):
    model = nn.Linear(2, 2).to(acc)
    first = samedevice.audit(model)
    second = samedevice.audit(model)  # the second lookup finds the function, not a module
    assert first.roots == second.roots == ["model"]


def test_explicit_device_and_a_model_never_moved(acc, acc_label):
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    report = audit(model, device=acc)
    assert len(report.findings) == 4
    assert {f.family for f in report.findings} == {"F3"}  # the whole model was never moved
    assert report.expected == acc_label
    assert report.basis == "the device asked for"
    text = str(report)
    assert "model (all parameters and buffers)  cpu     4 tensors  float32  F3" in text
    assert "model[0].weight" not in text  # folded into one row ...
    assert report.findings[0].path == "model[0].weight"  # ... but every tensor is in findings


def test_cuda_alias_spelling(acc):
    if acc.type != "sim":
        pytest.skip("the alias belongs to the simulated accelerator")
    from samedevice import sim

    with sim.cuda_alias():
        model = nn.Linear(2, 2).to("cuda")
        batch = {"x": torch.ones(2, 2)}
        report = audit(model, batch, device="cuda")
    assert report.expected == "cuda:0"
    assert [(f.path, f.expected) for f in report.findings] == [("batch['x']", "cuda:0")]


def test_no_tensors_says_so():
    report = audit(config={"lr": 0.1})
    assert not report
    assert str(report) == "samedevice.audit: found no tensors in config."


def test_no_parameters_prefers_the_accelerator(acc, acc_label):
    batch = {"x": torch.ones(2, device=acc), "y": torch.ones(2), "z": torch.ones(2)}
    report = audit(batch)
    assert report.expected == acc_label
    assert [f.path for f in report.findings] == ["batch['y']", "batch['z']"]


class Pipeline(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stage1 = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
        self.stage2 = nn.Sequential(nn.Linear(8, 32), nn.Linear(32, 2))


def test_model_split_over_two_accelerators_is_reported_not_flagged(acc, acc1):
    model = Pipeline()
    model.stage1.to(acc)
    model.stage2.to(acc1)
    report = audit(model)
    assert not report, str(report)
    assert report.split == [("model.stage1", f"{acc.type}:0"), ("model.stage2", f"{acc1.type}:1")]
    assert "split over several devices" in str(report)


def test_split_model_flags_the_odd_part_out(acc, acc1):
    model = Pipeline()
    model.stage1.to(acc)
    model.stage2.to(acc1)
    model.stage2[1] = nn.Linear(32, 2).to(acc)  # one layer of stage 2 on stage 1's device
    model.stage1.extra = nn.Linear(2, 2)  # and one left on the CPU
    batch = {"x": torch.ones(2, 8), "y": torch.ones(2, device=acc1)}
    report = audit(model, batch)
    got = [(f.path, f.device, f.expected, f.family) for f in report.findings]
    assert got == [
        ("model.stage1.extra.weight", "cpu", f"{acc.type}:0", "F1"),
        ("model.stage1.extra.bias", "cpu", f"{acc.type}:0", "F1"),
        ("model.stage2[1].weight", f"{acc.type}:0", f"{acc1.type}:1", "F8"),
        ("model.stage2[1].bias", f"{acc.type}:0", f"{acc1.type}:1", "F8"),
        ("batch['x']", "cpu", f"{acc.type}:0", "F3"),  # inputs go to the first stage
    ]


class BatchEncoding(dict):
    """A batch that moves itself, like transformers' ``BatchEncoding``: still data (F3)."""

    def to(self, device: torch.device) -> BatchEncoding:
        return BatchEncoding({k: v.to(device) for k, v in self.items()})


def test_a_batch_with_its_own_to_is_still_data(acc):
    model = nn.Linear(4, 2).to(acc)
    batch = BatchEncoding(input_ids=torch.ones(2, 4, device=acc), attention_mask=torch.ones(2, 4))
    report = audit(model, batch)
    assert [(f.path, f.family) for f in report.findings] == [("batch['attention_mask']", "F3")]
