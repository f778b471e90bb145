"""locate: the note a device error gains names the tensors of the failing call."""

from __future__ import annotations

import traceback

import pytest
import torch
from torch import nn

import samedevice
from samedevice import locate

URL = "https://samedevice.github.io/samedevice/families/"


def note_of(exc: BaseException) -> list[str]:
    notes = [n for n in getattr(exc, "__notes__", []) if n.startswith("samedevice.locate:")]
    assert len(notes) == 1, notes
    return notes[0].splitlines()


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.classifier = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.backbone(x))


def test_unmoved_batch_names_mat1(acc, acc_label):
    model = Classifier().to(acc)
    batch = {"pixels": torch.ones(2, 4), "labels": torch.zeros(2, dtype=torch.long)}
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device") as info:
        with locate(model, batch):
            model(batch["pixels"])
    lines = note_of(info.value)
    assert lines == [
        "samedevice.locate: F.linear failed in model.backbone[0] (Linear.forward)",
        "  mat1 (input) ← batch['pixels'] (cpu)  ✗",
        f"  weight ← model.backbone[0].weight ({acc_label})",
        f"  bias ← model.backbone[0].bias ({acc_label})",
        f"  ✗ not on {acc_label}, where most parameters are",
        f"  F3 Model and data apart: {URL}f3/",
    ]


class TinyGPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok_emb = nn.Embedding(50, 16)
        self.final_norm = nn.LayerNorm(16)
        self.out_head = nn.Linear(16, 50, bias=False)

    def forward(self, in_idx: torch.Tensor) -> torch.Tensor:
        x = self.tok_emb(in_idx)
        x = self.final_norm(x)
        return self.out_head(x)


def test_cpu_head_after_to_names_the_heads_weight(acc, acc_label):
    model = TinyGPT().to(acc)
    model.out_head = nn.Linear(16, 2)  # made on the CPU after the move
    input_batch = torch.randint(0, 50, (4, 8)).to(acc)
    with pytest.raises(RuntimeError) as info:
        with locate(model, input_batch):
            model(input_batch)
    lines = note_of(info.value)
    assert lines[0] == "samedevice.locate: F.linear failed in model.out_head (Linear.forward)"
    # The message names mat1 (the activations); the misplaced tensors are the head's.
    assert lines[1].startswith("  mat1 (input) ← x in TinyGPT.forward, test_locate.py:")
    assert lines[1].endswith(f" ({acc_label})")
    assert lines[2:] == [
        "  weight ← model.out_head.weight (cpu)  ✗",
        "  bias ← model.out_head.bias (cpu)  ✗",
        f"  ✗ not on {acc_label}, where most parameters are",
        f"  F1 Moved, then modified: {URL}f1/",
    ]


def test_cpu_index_for_embedding_names_index(acc, acc_label):
    model = TinyGPT().to(acc)
    batch = {"ids": torch.randint(0, 50, (2, 5))}
    with pytest.raises(RuntimeError, match="index is on cpu") as info:
        with locate(model, batch):
            model(batch["ids"])
    lines = note_of(info.value)
    assert lines[:3] == [
        "samedevice.locate: F.embedding failed in model.tok_emb (Embedding.forward)",
        "  index (input) ← batch['ids'] (cpu)  ✗",
        f"  weight ← model.tok_emb.weight ({acc_label})",
    ]
    assert lines[-1] == f"  F3 Model and data apart: {URL}f3/"


def test_two_accelerators_point_to_f8(acc, acc1):
    x = torch.ones(3, device=acc)
    y = torch.ones(3, device=acc1)
    with pytest.raises(RuntimeError, match="found at least two devices") as info:
        with locate(x, y):
            x + y
    assert note_of(info.value) == [
        "samedevice.locate: Tensor.add failed",
        f"  self ← x ({acc.type}:0)",
        f"  other ← y ({acc1.type}:1)  ✗",
        f"  ✗ not on {acc.type}:0, where most tensors are",
        f"  F8 Multi-device placement: {URL}f8/",
    ]


class Positional(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.arange(x.shape[-1])  # no device=: lands on the CPU


def test_factory_without_device_points_to_f4(acc, acc_label):
    model = Positional()
    with pytest.raises(RuntimeError) as info:
        with locate(model):
            model(torch.ones(2, 3, device=acc))
    lines = note_of(info.value)
    assert lines[0] == "samedevice.locate: Tensor.add failed in model (Positional.forward)"
    assert lines[2].startswith("  other ← made by torch.arange at test_locate.py:")
    assert lines[2].endswith(" without device= (cpu)  ✗")
    assert lines[-1] == f"  F4 Created on the default device: {URL}f4/"


def test_transfer_mid_computation_points_to_f5(acc):
    weight = torch.ones(3, 3, device=acc)
    with pytest.raises(RuntimeError) as info:
        with locate(weight):
            weight - (weight @ weight).detach().cpu()
    lines = note_of(info.value)
    assert lines[1] == f"  self ← weight ({acc.type}:0)"
    assert lines[2].startswith(f"  other ← moved from {acc.type}:0 by .cpu() at test_locate.py:")
    assert lines[-1] == f"  F5 Premature transfer: {URL}f5/"


def test_optimizer_state_left_behind_points_to_f7(acc):
    model = nn.Linear(4, 4)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()  # state made on the CPU
    model.to(acc)
    optimizer.zero_grad()
    model(torch.ones(2, 4, device=acc)).sum().backward()
    with pytest.raises(RuntimeError) as info:  # the foreach kernels' wording differs by device
        with locate(model, optimizer):
            optimizer.step()
    lines = note_of(info.value)
    assert any(line.endswith("← optimizer.state[model.weight]['exp_avg'] (cpu)  ✗") for line in lines), lines
    assert lines[-1] == f"  F7 Checkpoint restore: {URL}f7/"


def test_as_decorator_with_objects(acc):
    model = Classifier().to(acc)
    batch = {"pixels": torch.ones(2, 4)}

    @locate(model, batch)
    def step() -> torch.Tensor:
        return model(batch["pixels"])

    with pytest.raises(RuntimeError) as info:
        step()
    assert note_of(info.value)[1] == "  mat1 (input) ← batch['pixels'] (cpu)  ✗"
    assert step.__wrapped__ is not None


def test_as_bare_decorator_names_by_the_functions_variables(acc):
    model = Classifier().to(acc)

    @locate
    def train_step(images: torch.Tensor) -> torch.Tensor:
        return model(images)

    with pytest.raises(RuntimeError) as info:
        train_step(torch.ones(2, 4))
    lines = note_of(info.value)
    assert lines[1].startswith("  mat1 (input) ← images in test_as_bare_decorator_names_by_the_functions")
    assert train_step.__name__ == "train_step"


def test_other_errors_and_success_are_untouched(acc):
    model = Classifier().to(acc)
    with pytest.raises(ValueError) as info:
        with locate(model):
            raise ValueError("not a device error")
    assert not hasattr(info.value, "__notes__")
    with locate(model):
        out = model(torch.ones(2, 4, device=acc))
    assert out.shape == (2, 3)


def test_nested_blocks_add_one_note(acc):
    model = Classifier().to(acc)
    batch = {"pixels": torch.ones(2, 4)}
    with pytest.raises(RuntimeError) as info:
        with locate(model):
            with locate(model, batch):
                model(batch["pixels"])
    assert len(info.value.__notes__) == 1


def test_meta_device(acc):
    model = Classifier().to("meta")
    batch = {"pixels": torch.ones(2, 4)}
    with pytest.raises(RuntimeError, match="Tensor on device meta is not on the expected device cpu") as info:
        with locate(model, batch):
            model(batch["pixels"])
    lines = note_of(info.value)
    assert lines[1] == "  input ← batch['pixels'] (cpu)  ✗"
    assert lines[2] == "  weight ← model.backbone[0].weight (meta)"


def test_error_outside_torchs_api_falls_back_to_an_audit(acc):
    model = Classifier().to(acc)
    model.classifier = nn.Linear(8, 3)
    with pytest.raises(RuntimeError) as info:
        with locate(model):
            raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                               "two devices, cuda:0 and cpu!")
    assert note_of(info.value) == [
        "samedevice.locate: the failing call was not a torch API call seen inside the block.",
        f"  Misplaced in model (not on {acc.type}:0):",
        "  model.classifier.weight (cpu) F1",
        "  model.classifier.bias (cpu) F1",
        f"  F1 Moved, then modified: {URL}f1/",
    ]


def test_traceback_ends_at_the_users_call_not_in_samedevice(acc):
    model = Classifier().to(acc)
    with pytest.raises(RuntimeError) as info:
        with locate(model):
            model(torch.ones(2, 4))
    files = [f.filename for f in traceback.extract_tb(info.value.__traceback__)]
    assert not any("/samedevice/auditing/" in f for f in files), files


def test_cuda_alias_spelling(acc):
    if acc.type != "sim":
        pytest.skip("the alias belongs to the simulated accelerator")
    from samedevice import sim

    with sim.cuda_alias():
        model = Classifier().to("cuda")
        batch = {"pixels": torch.ones(2, 4)}
        with pytest.raises(RuntimeError, match="different from other tensors on cuda:0") as info:
            with locate(model, batch):
                model(batch["pixels"])
    assert note_of(info.value)[2] == "  weight ← model.backbone[0].weight (cuda:0)"


def test_never_initialises_cuda(acc):
    model = Classifier().to(acc)
    with pytest.raises(RuntimeError):
        with samedevice.locate(model):
            model(torch.ones(2, 4))
    samedevice.audit(model, device="cuda")
    assert not torch.cuda.is_initialized() or acc.type == "cuda"


def test_a_mode_pushed_inside_the_block_survives_it():
    from torch.overrides import TorchFunctionMode

    class Users(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    before = torch._C._len_torch_function_stack()
    users = Users()
    with locate():
        users.__enter__()  # pushed for good, as sim.enable(alias_cuda=True) does
    assert torch._C._len_torch_function_stack() == before + 1
    assert torch._C._get_function_stack_at(before) is users
    users.__exit__(None, None, None)
    assert torch._C._len_torch_function_stack() == before


def test_bare_decorator_on_a_method(acc):
    class Trainer:
        def __init__(self) -> None:
            self.model = Classifier().to(acc)

        @locate
        def step(self, images: torch.Tensor) -> torch.Tensor:
            return self.model(images)

    trainer = Trainer()
    assert trainer.step(torch.ones(2, 4, device=acc)).shape == (2, 3)
    with pytest.raises(RuntimeError) as info:
        trainer.step(torch.ones(2, 4))
    assert note_of(info.value)[0] == "samedevice.locate: F.linear failed in Linear.forward"
