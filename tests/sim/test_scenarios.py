"""The study's scenarios, each as a buggy and a fixed program.

The buggy program must raise CUDA's exact error shape (template, op, argument, device pair)
on the simulated accelerator answering to "cuda"; the fixed program must compute what a plain
CPU run computes. Each ``program(device, bug)`` builds everything on ``device``.
"""

from __future__ import annotations

import copy
import io

import pytest
import torch
from torch import nn

from samedevice.testing import assert_matches_cpu, expect_device_error

CPU = torch.device("cpu")


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


# 1. A head assigned after .to(): the new layer stays on the CPU (F1).
def head_after_to(device, bug):
    model = mlp().to(device)
    model[2] = nn.Linear(16, 2)
    if not bug:
        model.to(device)
    return model(torch.ones(3, 8, device=device))


# 2. A tensor kept as a plain attribute instead of a buffer (F2).
class Centered(nn.Module):
    def __init__(self, register: bool):
        super().__init__()
        if register:
            self.register_buffer("center", torch.full((4,), 0.5))
        else:
            self.center = torch.full((4,), 0.5)

    def forward(self, x):
        return x - self.center


def attribute_not_buffer(device, bug):
    return Centered(register=not bug).to(device)(torch.ones(2, 4, device=device))


# 3. Submodules in a plain list instead of nn.ModuleList (F2).
class Blocks(nn.Module):
    def __init__(self, module_list: bool):
        super().__init__()
        torch.manual_seed(0)
        blocks = [nn.Linear(4, 4) for _ in range(2)]
        self.blocks = nn.ModuleList(blocks) if module_list else blocks

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def plain_list(device, bug):
    return Blocks(module_list=not bug).to(device)(torch.ones(2, 4, device=device))


# 4. Labels not moved with the batch (F3).
def labels_not_moved(device, bug):
    torch.manual_seed(0)
    logits = torch.randn(4, 3, device=device, requires_grad=True)
    labels = torch.tensor([0, 2, 1, 0])
    if not bug:
        labels = labels.to(device)
    loss = nn.functional.cross_entropy(logits, labels)
    loss.backward()
    return loss, logits.grad


# 5. A factory in forward without device= (F4).
class Positional(nn.Module):
    def __init__(self, fixed: bool):
        super().__init__()
        self.fixed = fixed

    def forward(self, x):
        pos = torch.arange(x.shape[1], device=x.device if self.fixed else None)
        return x + pos


def arange_in_forward(device, bug):
    return Positional(fixed=not bug)(torch.ones(2, 5, device=device))


# 6. .detach().cpu() bound to one operand (F5); a 0-dim CPU result is fine as a scalar.
def detach_cpu_mixed(device, bug):
    torch.manual_seed(0)
    w = torch.randn(3, 3, device=device)
    recon = torch.randn(3, 2, device=device) @ torch.randn(2, 3, device=device)
    scalar_ok = w - w.detach().cpu().mean()  # 0-dim CPU tensor: accepted like CUDA does
    diff = w - recon.detach().cpu() if bug else (w - recon).detach().cpu()
    return diff, scalar_ok


# 7. Optimizer state loaded before the model moved (F7).
def optimizer_state_before_move(device, bug):
    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.ones(2, 8)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    ckpt = torch.load(buf, map_location="cpu")
    model2 = mlp()
    model2.load_state_dict(ckpt["model"])
    opt2 = torch.optim.Adam(model2.parameters(), lr=0.01)
    if bug:
        opt2.load_state_dict(ckpt["opt"])  # state restored while the params are on the CPU ...
        model2.to(device)  # ... then the params move; Adam's exp_avg stays behind
    else:
        model2.to(device)
        opt2.load_state_dict(ckpt["opt"])  # load_state_dict casts state to the params' device
    model2(torch.ones(2, 8, device=device)).sum().backward()
    opt2.step()
    return [p.detach() for p in model2.parameters()]


# 8. A CPU index into an accelerator embedding (F3/F9).
def cpu_index(device, bug):
    torch.manual_seed(0)
    emb = nn.Embedding(10, 3).to(device)
    idx = torch.tensor([1, 5, 5])
    if not bug:
        idx = idx.to(device)
    return emb(idx)


# 9. Twenty training steps, SGD and Adam; the batch not moved (F3).
def training(device, bug):
    out = []
    for opt_cls in (torch.optim.SGD, torch.optim.Adam):
        model = mlp().to(device)
        opt = opt_cls(model.parameters(), lr=0.01)
        torch.manual_seed(1)
        x, y = torch.randn(32, 8), torch.randn(32, 4)
        if not bug:
            x, y = x.to(device), y.to(device)
        for _ in range(20):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        out += [p.detach() for p in model.parameters()]
    return out


# 10. In-place updates, views, item/tolist/print.
def inplace_and_views(device, bug):
    x = torch.arange(12.0, device=device).view(3, 4)
    row = x[1]
    row += torch.ones(4) if bug else torch.ones(4, device=device)
    x.t_()
    text = repr(x)
    return x.contiguous(), torch.tensor(x.sum().item()), torch.tensor(x[0].tolist()), len(text) > 0


# 11. DataLoader(pin_memory=True) with a batch that is never moved (F3).
def pinned_loader(device, bug):
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(8, 8), torch.randn(8, 4))
    model = mlp().to(device)
    outs = []
    for x, _ in torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True):
        if not bug:
            x = x.to(device, non_blocking=True)
        outs.append(model(x))
    return outs


# 12. A CPU generator for an accelerator sampling op (F9).
def generator(device, bug):
    gen = torch.Generator(device="cpu" if bug else device).manual_seed(7)
    return torch.randn(5, device=device, generator=gen)


# 13. state_dict / deepcopy / to(dtype): a CPU copy fed accelerator input (F3).
def copies(device, bug):
    model = mlp().to(device)
    clone = copy.deepcopy(model)
    restored = mlp()
    restored.load_state_dict(clone.state_dict())
    if not bug:
        restored.to(device)
    doubled = copy.deepcopy(model).to(torch.float64)
    x = torch.ones(2, 8, device=device)
    return restored(x), doubled(x.double())


SCENARIOS = [
    # (program, template, op, argument, devices as printed under the "cuda" alias)
    (head_after_to, "T2", "addmm", "mat1", ("cuda:0", "cpu")),
    (attribute_not_buffer, "T1", "", "", ("cuda:0", "cpu")),
    (plain_list, "T2", "addmm", "mat1", ("cuda:0", "cpu")),
    (labels_not_moved, "T2", "nll_loss_forward", "target", ("cpu", "cuda:0")),
    (arange_in_forward, "T1", "", "", ("cuda:0", "cpu")),
    (detach_cpu_mixed, "T1", "", "", ("cuda:0", "cpu")),
    (optimizer_state_before_move, "T1", "", "", ("cuda:0", "cpu")),
    (cpu_index, "T2", "index_select", "index", ("cpu", "cuda:0")),
    (training, "T2", "addmm", "mat1", ("cpu", "cuda:0")),
    (inplace_and_views, "T1", "", "", ("cuda:0", "cpu")),
    (pinned_loader, "T2", "addmm", "mat1", ("cpu", "cuda:0")),
    (generator, "T8", "", "", ("cuda", "cpu")),
    (copies, "T2", "addmm", "mat1", ("cuda:0", "cpu")),
]
IDS = [s[0].__name__ for s in SCENARIOS]


@pytest.mark.parametrize(("program", "template", "op", "argument", "devices"), SCENARIOS, ids=IDS)
def test_buggy_program_raises_cudas_error(cuda, program, template, op, argument, devices):
    with expect_device_error(template=template, op=op or None, argument=argument or None,
                             devices=devices):
        program(cuda, bug=True)


@pytest.mark.parametrize("program", [s[0] for s in SCENARIOS], ids=IDS)
def test_fixed_program_matches_cpu(cuda, program):
    assert_matches_cpu(lambda d: program(d, bug=False), device=cuda)


@pytest.mark.parametrize("program", [s[0] for s in SCENARIOS], ids=IDS)
def test_buggy_program_runs_on_the_cpu(program):
    """On one device there is nothing to mismatch: the bug only shows on an accelerator."""
    program(CPU, bug=True)


def test_messages_use_the_simulators_own_name_without_the_alias(simdev):
    with expect_device_error(template="T2", op="addmm", argument="mat1", devices=("sim:0", "cpu")) as e:
        head_after_to(simdev, bug=True)
    assert "wrapper_PrivateUse1_addmm" in str(e.exception)
