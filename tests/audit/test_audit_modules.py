"""audit on models that hide misplaced tensors in every place the walk must look."""

from __future__ import annotations

import dataclasses
import weakref

import pytest
import torch
from torch import nn

from samedevice import audit


def paths(report) -> list[str]:
    return [f.path for f in report.findings]


class Center(nn.Module):
    """Lightly 1.5.11's helper: the tensor is a plain attribute, not a buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.value = torch.zeros(1, 8)


class DINOLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self._center = Center()
        self.register_buffer("center", self._center.value)  # the same object, until .to()


def test_helper_module_attribute_left_behind_is_f2(acc, acc_label):
    loss_fn = DINOLoss().to(acc)
    report = audit(loss_fn)
    assert paths(report) == ["loss_fn._center.value"]
    (f,) = report.findings
    assert (f.device, f.shape, f.dtype, f.family, f.expected) == ("cpu", (1, 8), "float32", "F2", acc_label)


def test_head_replaced_after_to_is_f1(acc, acc_label):
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8)).to(acc)
    model.out_head = nn.Linear(8, 2)
    report = audit(model)
    assert paths(report) == ["model.out_head.weight", "model.out_head.bias"]
    assert {f.family for f in report.findings} == {"F1"}
    assert report.expected == acc_label


def test_sequential_children_are_indexed(acc):
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8)).to(acc)
    model[1] = nn.Linear(8, 8)
    assert paths(audit(model)) == ["model[1].weight", "model[1].bias"]


def test_module_dict_children_are_keyed(acc):
    class Heads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.trunk = nn.Linear(8, 64)
            self.heads = nn.ModuleDict({"cls": nn.Linear(64, 2)})

    model = Heads().to(acc)
    model.heads["box"] = nn.Linear(64, 4)
    assert paths(audit(model)) == ["model.heads['box'].weight", "model.heads['box'].bias"]


class PlainState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.scale = torch.ones(8)  # plain attribute
        self.tables = {"pos": torch.zeros(4, 8)}  # dict in vars()
        self.history = [torch.zeros(2)]  # list in vars()
        self.pair = (torch.zeros(3), 1.0)  # tuple in vars()


def test_tensors_in_plain_attributes_and_containers_are_f2(acc):
    model = PlainState().to(acc)
    report = audit(model)
    assert paths(report) == ["model.scale", "model.tables['pos']", "model.history[0]", "model.pair[0]"]
    assert {f.family for f in report.findings} == {"F2"}


@dataclasses.dataclass
class Stats:
    mean: torch.Tensor
    count: int


class Slotted:
    __slots__ = ("table", "unset")

    def __init__(self) -> None:
        self.table = torch.zeros(5)


def test_dataclasses_and_slotted_helpers_are_walked(acc):
    model = nn.Linear(8, 8).to(acc)
    model.stats = Stats(torch.zeros(8), 0)
    model.cache = Slotted()
    report = audit(model)
    assert paths(report) == ["model.stats.mean", "model.cache.table"]


class Blocks(nn.Module):
    def __init__(self, container: str) -> None:
        super().__init__()
        self.embed = nn.Linear(8, 8)
        layers = [nn.Linear(8, 8), nn.Linear(8, 8)]
        self.blocks = layers if container == "list" else {"a": layers[0], "b": layers[1]}


@pytest.mark.parametrize(("container", "first"), [("list", "model.blocks[0].weight"),
                                                   ("dict", "model.blocks['a'].weight")])
def test_submodules_in_plain_list_or_dict_are_f2_with_a_note(acc, container, first):
    model = Blocks(container).to(acc)
    report = audit(model)
    assert paths(report)[0] == first
    assert len(report.findings) == 4
    assert {f.family for f in report.findings} == {"F2"}
    assert report.notes == [f"{first.rsplit('.', 1)[0]} is a module in a plain attribute, list or dict: "
                            ".to() and .parameters() miss it", *report.notes[1:]]
    assert len(report.notes) == 2


@pytest.mark.parametrize("make", [
    lambda: nn.BatchNorm1d(8),
    lambda: nn.LSTM(8, 8, num_layers=2),
    lambda: nn.MultiheadAttention(8, 2),
    lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16),
    lambda: nn.Embedding(10, 8),
    lambda: nn.Conv2d(3, 4, 3),
], ids=["batchnorm", "lstm", "mha", "transformer", "embedding", "conv"])
def test_no_false_positives_on_registered_parameters_and_buffers(acc, make):
    model = make().to(acc)
    report = audit(model)
    assert not report, str(report)
    assert report.findings == []
    assert report.tensors >= 1
    assert "Nothing misplaced" in str(report)


def test_alias_of_a_parameter_is_reported_once_under_its_registered_name(acc):
    model = nn.Linear(8, 8)
    model.alias = [model.weight]  # same object, plain list
    model.out = nn.Linear(8, 8).to(acc)
    model.extra = nn.Linear(8, 64).to(acc)  # majority on the accelerator
    report = audit(model)
    assert paths(report) == ["model.weight", "model.bias"]


def test_meta_model_is_read_without_materialising(acc):
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8)).to("meta")
    model.stray = torch.zeros(3)
    report = audit(model)
    assert report.expected == "meta"
    assert [(f.path, f.device) for f in report.findings] == [("model.stray", "cpu")]
    assert model[0].weight.is_meta


def test_cycles_terminate():
    a: dict = {"t": torch.zeros(1)}
    b = [a]
    a["b"] = b
    holder = type("Holder", (), {})()
    holder.me = holder
    holder.data = a
    model = nn.Linear(2, 2)
    model.loop = holder
    model.parent_ref = [model]
    report = audit(model)
    assert report.tensors == 3  # weight, bias, the dict's tensor
    assert not report


class Exploding:
    """An object whose attributes cannot be read (its class still can)."""

    def __getattribute__(self, name: str):
        if name == "__class__":
            return type(self)
        raise RuntimeError("boom: attribute access is not allowed")


class Gone:
    pass


def test_objects_whose_attribute_access_raises_are_skipped():
    model = nn.Linear(2, 2)
    gone = Gone()
    model.helpers = [Exploding(), weakref.proxy(gone), torch.ones(2)]
    del gone  # the proxy is dead: every access raises ReferenceError
    report = audit(model)
    assert [s.path for s in report.skipped] == ["model.helpers[0]", "model.helpers[1]"]
    assert report.skipped[0].reason == "RuntimeError: boom: attribute access is not allowed"
    assert report.skipped[1].reason.startswith("ReferenceError: weakly-referenced object")
    assert report.to_dict()["skipped"][0] == {
        "path": "model.helpers[0]", "reason": "RuntimeError: boom: attribute access is not allowed"}
    assert "model.helpers[0]: RuntimeError: boom" in str(report)
    assert report.tensors == 3  # the walk went on past them


def test_deep_plain_nesting_stops_at_the_depth_bound():
    from samedevice.auditing._walk import MAX_PLAIN_DEPTH

    nested: object = torch.zeros(1)
    for _ in range(MAX_PLAIN_DEPTH + 2):
        nested = [nested]
    model = nn.Linear(2, 2)
    model.deep = nested
    report = audit(model)
    assert report.tensors == 2
    # model.deep is level 1; the container at level MAX_PLAIN_DEPTH + 1 is not read
    assert report.skipped[0].path == "model.deep" + "[0]" * MAX_PLAIN_DEPTH
    assert "deeper than" in report.skipped[0].reason
