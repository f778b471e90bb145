"""The shared analysis: from a failing statement and the message's facts to the culprit.

Each test is a small program in the shape of a real report, the line the traceback names and
the facts explain reads from the message; it asserts the culprit expression, the line where it
was made, its kind and family -- or that the code does not decide and says what is open.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from samedevice.analysis.culprit import diagnose
from samedevice.analysis.source import SourceFile

T1 = {"template": "T1", "op": "", "argument": "", "devices": ["cuda:0", "cpu"], "message": ""}


def run(code: str, marker: str, facts: dict | None = None):
    code = textwrap.dedent(code)
    line = next(i for i, text in enumerate(code.splitlines(), 1) if marker in text)
    src = SourceFile(ast.parse(code), "prog.py", code)
    return diagnose(src, line, facts or T1, path="prog.py")


def made_line(diag) -> int:
    return int(diag.culprit.made_at.split("  ")[0].rsplit(":", 1)[1])


def test_helper_object_attribute_dino_loss():
    d = run('''
        import torch
        from torch import nn

        class Center(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.value = torch.zeros(1, dim)

        class DINOLoss(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self._center = Center(dim)

            def forward(self, teacher_out):
                return teacher_out - self._center.value  # FAIL
    ''', "# FAIL")
    assert d.culprit.expr == "self._center.value"
    assert d.culprit.kind == "helper-object-attribute" and d.culprit.family == "F2"
    assert made_line(d) == 8


def test_factory_without_device_in_forward_through_a_name():
    d = run('''
        import torch
        class PosEnc(torch.nn.Module):
            def forward(self, x):
                pos = torch.arange(x.shape[1])
                freqs = pos.float().unsqueeze(0)
                return x * freqs  # FAIL
    ''', "# FAIL")
    assert d.culprit.expr == "freqs"
    assert d.culprit.kind == "factory-without-device" and d.culprit.family == "F4"
    assert made_line(d) == 5
    assert "device=x.device" in d.culprit.fix


def test_plain_tensor_attribute_not_a_buffer():
    d = run('''
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.ones(3)
                self.register_buffer("shift", torch.zeros(3))

            def forward(self, x):
                return x * self.scale + self.shift  # FAIL
    ''', "# FAIL")
    assert d.culprit.expr == "self.scale"
    assert d.culprit.kind == "plain-tensor-attribute" and d.culprit.family == "F2"
    assert made_line(d) == 6


def test_registered_buffer_is_not_a_culprit():
    d = run('''
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("shift", torch.zeros(3))

            def forward(self, x, y):
                return y + self.shift  # FAIL
    ''', "# FAIL")
    assert d.culprit is None
    assert "y" in d.open and "self.shift" in d.open


def test_layer_replaced_after_move_llms_from_scratch():
    facts = {"template": "T1", "op": "addmm", "op_base": "addmm", "argument": "mat1",
             "argument_device": "cuda:0", "devices": ["cuda:0", "cpu"], "message": ""}
    d = run('''
        import torch
        model = GPTModel(cfg)
        model.to(device)
        model.out_head = torch.nn.Linear(768, 2)
        logits = model.out_head(x)  # FAIL
    ''', "# FAIL", facts)
    assert d.culprit.expr == "model.out_head"
    assert d.culprit.kind == "layer-created-after-move" and d.culprit.family == "F1"
    assert made_line(d) == 5


def test_layers_in_a_plain_list():
    facts = {"template": "T2", "op": "addmm", "argument": "mat2", "argument_device": "cpu",
             "devices": ["cpu", "cuda:0"], "message": ""}
    d = run('''
        from torch import nn
        class Mixer(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = [nn.Linear(4, 4) for _ in range(2)]

            def forward(self, x):
                for i in range(2):
                    x = self.blocks[i](x)  # FAIL
                return x
    ''', "# FAIL", facts)
    assert d.culprit.kind == "modules-in-plain-list" and d.culprit.family == "F2"
    assert made_line(d) == 6


def test_batch_from_the_loader_never_moved():
    facts = {"template": "T3", "op": "", "argument": "", "devices": [],
             "message": "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same"}
    d = run('''
        model = Net().cuda()
        for images, labels in train_loader:
            out = model(images)  # FAIL
    ''', "# FAIL", facts)
    assert d.culprit.expr == "images"
    assert d.culprit.kind == "input-not-moved" and d.culprit.family == "F3"
    assert made_line(d) == 3


def test_moved_batch_is_not_a_culprit():
    d = run('''
        for images, labels in train_loader:
            images = images.to(device)
            out = model(images) - labels  # FAIL
    ''', "# FAIL")
    assert d.culprit.expr == "labels" and d.culprit.kind == "input-not-moved"


def test_torch_load_without_map_location():
    facts = {"template": "T10", "op": "", "argument": "", "devices": [], "message": ""}
    d = run('''
        import torch
        state = torch.load("ckpt.pt")  # FAIL
    ''', "# FAIL", facts)
    assert d.culprit.kind == "torch-load-no-map-location" and d.culprit.family == "F7"


def test_numpy_of_an_accelerator_tensor():
    facts = {"template": "T11", "op": "", "argument": "", "devices": [], "message": ""}
    d = run('''
        feats = model(x)
        arr = feats.numpy()  # FAIL
    ''', "# FAIL", facts)
    assert d.culprit.expr == "feats" and d.culprit.family == "F9"


def test_legacy_typed_constructor_is_a_cpu_factory():
    d = run('''
        import torch
        def step(w, xi, g):
            return w - torch.FloatTensor(xi) * g  # FAIL
    ''', "# FAIL")
    assert d.culprit.expr == "torch.FloatTensor(xi)" and d.culprit.kind == "factory-without-device"


def test_the_whole_statement_not_the_line():
    d = run('''
        import torch
        def f(x):
            y = (x +
                 torch.zeros(3))  # FAIL
            return y
    ''', "# FAIL")
    assert (d.line, d.end_line) == (4, 5)
    assert d.culprit.expr == "torch.zeros(3)"


def test_a_parameter_stays_open():
    d = run('''
        def f(a, b):
            return a + b  # FAIL
    ''', "# FAIL")
    assert d.culprit is None and "`a`" in d.open


@pytest.mark.parametrize("depth", [900])
def test_deep_code_does_not_recurse(depth):
    code = "def f(x):\n    return x" + " + x" * depth + "\n"
    src = SourceFile(ast.parse(code), "deep.py", code)
    d = diagnose(src, 2, T1, path="deep.py")
    assert d is not None
