"""audit on optimizers, LR schedulers and torchmetrics-style metrics."""

from __future__ import annotations

import torch
from torch import nn

from samedevice import audit


def stepped(model: nn.Module) -> torch.optim.Adam:
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
    return opt


def test_optimizer_state_left_on_cpu_after_model_moved_is_f7(acc, acc_label):
    model = nn.Linear(4, 4)
    optimizer = stepped(model)  # state is made on the CPU, next to the parameters
    model.to(acc)  # moves the parameters, not the optimizer's state
    report = audit(model, optimizer)
    assert [f.path for f in report.findings] == [
        "optimizer.state[model.weight]['exp_avg']",
        "optimizer.state[model.weight]['exp_avg_sq']",
        "optimizer.state[model.bias]['exp_avg']",
        "optimizer.state[model.bias]['exp_avg_sq']",
    ]
    assert {(f.family, f.device, f.expected) for f in report.findings} == {("F7", "cpu", acc_label)}


def test_adam_step_counter_on_cpu_is_not_a_finding(acc):
    model = nn.Linear(4, 4)
    optimizer = stepped(model)
    model.to(acc)
    for state in optimizer.state.values():
        state["exp_avg"] = state["exp_avg"].to(acc)
        state["exp_avg_sq"] = state["exp_avg_sq"].to(acc)
    report = audit(model, optimizer)
    assert all(s["step"].device.type == "cpu" for s in optimizer.state.values())
    assert not report, str(report)
    assert report.tensors == 8  # 2 parameters, 2 x (step, exp_avg, exp_avg_sq)


def test_capturable_step_counter_must_be_on_the_device(acc):
    model = nn.Linear(4, 4).to(acc)
    optimizer = torch.optim.Adam(model.parameters(), capturable=True)
    optimizer.state[model.weight] = {"step": torch.tensor(1.0), "exp_avg": torch.zeros(4, 4, device=acc)}
    report = audit(model, optimizer)
    assert [f.path for f in report.findings] == ["optimizer.state[model.weight]['step']"]
    assert report.findings[0].shape == ()


def test_optimizer_holding_parameters_that_are_not_the_models_is_f7(acc):
    old = nn.Linear(4, 4)
    optimizer = torch.optim.SGD(old.parameters(), lr=0.1)  # built on a model later replaced
    model = nn.Linear(4, 4).to(acc)
    report = audit(model, optimizer)
    assert [(f.path, f.family) for f in report.findings] == [
        ("optimizer.param_groups[0]['params'][0]", "F7"),
        ("optimizer.param_groups[0]['params'][1]", "F7"),
    ]


def test_optimizer_state_is_named_through_the_models_path_whatever_the_order(acc):
    model = nn.Sequential(nn.Linear(4, 4))
    optimizer = stepped(model)
    model.to(acc)
    report = audit(optimizer, model)  # optimizer first: names still come from the model
    assert report.findings[0].path == "optimizer.state[model[0].weight]['exp_avg']"


class WarmupTable(torch.optim.lr_scheduler.LRScheduler):
    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.factors = torch.linspace(0.1, 1.0, 10)
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        return [base * 1.0 for base in self.base_lrs]


def test_scheduler_tensors_are_f7(acc):
    model = nn.Linear(4, 4).to(acc)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = WarmupTable(optimizer)
    report = audit(model, optimizer, scheduler)
    assert [(f.path, f.family) for f in report.findings] == [("scheduler.factors", "F7")]


class MeanMetric(nn.Module):
    """Keeps state the way torchmetrics' ``Metric`` does: ``add_state`` fills ``_defaults``
    and sets a plain attribute, which the metric's own ``_apply`` moves."""

    def __init__(self) -> None:
        super().__init__()
        self._defaults: dict[str, torch.Tensor] = {}
        self.add_state("total", torch.tensor(0.0))
        self.add_state("count", torch.tensor(0))

    def add_state(self, name: str, default: torch.Tensor) -> None:
        self._defaults[name] = default.clone()
        setattr(self, name, default)


def test_metric_state_left_on_cpu_is_f6(acc):
    model = nn.Linear(4, 4).to(acc)
    metric = MeanMetric()  # e.g. moved to the CPU by a teardown and never moved back
    report = audit(model, metric)
    assert [(f.path, f.family, f.shape) for f in report.findings] == [
        ("metric.total", "F6", ()), ("metric.count", "F6", ())]


class ResultMetric:
    """Lightning's _ResultMetric, reduced: no nn.Module, its own ``cpu()`` for teardown."""

    def __init__(self, device: torch.device) -> None:
        self.value = torch.tensor(0.0, device=device)
        self.cumulated_batch_size = torch.tensor(0, device=device)

    def cpu(self) -> None:
        self.value, self.cumulated_batch_size = self.value.cpu(), self.cumulated_batch_size.cpu()


def test_state_of_an_object_that_moves_itself_is_f6(acc):
    metric = ResultMetric(acc)
    metric.cpu()  # a teardown
    metric.value = metric.value.to(acc)  # the next update brought one state back
    report = audit(metric=metric, device=acc)
    assert [(f.path, f.dtype, f.family) for f in report.findings] == [
        ("metric.cumulated_batch_size", "int64", "F6")]


def test_metric_kept_in_a_plain_dict_is_f2(acc):
    class LitModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.metrics = {"train_mean": MeanMetric()}  # not an nn.ModuleDict: .to() misses it

    model = LitModel().to(acc)
    report = audit(model)
    assert [(f.path, f.family) for f in report.findings] == [
        ("model.metrics['train_mean'].total", "F2"), ("model.metrics['train_mean'].count", "F2")]
    assert report.notes == ["model.metrics['train_mean'] is a module in a plain attribute, list or dict: "
                            ".to() and .parameters() miss it"]
