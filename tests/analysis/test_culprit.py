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


# -- what the analysis follows beyond one class in one file --------------------------------------

def _file(tmp_path, rel: str, code: str):
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code))
    return path


def _parse(path, shown: str):
    text = path.read_text()
    return SourceFile(ast.parse(text), shown, text, local=path)


def test_the_helper_class_of_another_file_and_the_branch_its_arguments_choose(tmp_path):
    """Lightly 1.5.11's shape: `Center` (another file) registers its tensor or keeps it plainly,
    as `_register_buffer` says; `value` is a property; DINOLoss builds it with False."""
    from samedevice.analysis.project import Project

    _file(tmp_path, "lightly/__init__.py", "")
    _file(tmp_path, "lightly/models/__init__.py", "")
    _file(tmp_path, "lightly/models/center.py", '''
        import torch
        from torch import nn

        class Center(nn.Module):
            def __init__(self, size, momentum=0.9, _register_buffer=True):
                super().__init__()
                center = torch.zeros(size)
                if _register_buffer:
                    self.register_buffer("center", center)
                else:
                    self.center = center

            @property
            def value(self):
                return self.center
    ''')
    loss = _file(tmp_path, "lightly/loss/dino_loss.py", '''
        from torch import nn
        from ..models.center import Center

        class DINOLoss(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self._center = Center(size=(1, 1, dim), _register_buffer=False)

            def forward(self, teacher_out):
                return teacher_out - self._center.value  # FAIL
    ''')
    _file(tmp_path, "lightly/loss/__init__.py", "")
    src = _parse(loss, "lightly/loss/dino_loss.py")
    line = next(i for i, t in enumerate(src.lines, 1) if "# FAIL" in t)
    d = diagnose(src, line, T1, path="lightly/loss/dino_loss.py", project=Project([tmp_path]))
    assert d.culprit.expr == "self._center.value"
    assert (d.culprit.kind, d.culprit.family) == ("helper-object-attribute", "F2")
    assert d.culprit.made_at.startswith("lightly/models/center.py:12  self.center = center")
    # registered (the default): the module moves it, nothing to blame
    src_registered = SourceFile(ast.parse(src.text.replace(", _register_buffer=False", "")), "x.py",
                                src.text.replace(", _register_buffer=False", ""), local=loss)
    d2 = diagnose(src_registered, line, T1, path="x.py", project=Project([tmp_path]))
    assert d2.culprit is None


def test_a_base_class_in_another_file_holds_the_plain_attribute(tmp_path):
    from samedevice.analysis.project import Project

    _file(tmp_path, "pkg/__init__.py", "")
    _file(tmp_path, "pkg/base.py", '''
        import torch
        class Base(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.ones(3)
    ''')
    model = _file(tmp_path, "pkg/model.py", '''
        from pkg.base import Base
        class Net(Base):
            def forward(self, x):
                return x * self.scale  # FAIL
    ''')
    src = _parse(model, "pkg/model.py")
    line = next(i for i, t in enumerate(src.lines, 1) if "# FAIL" in t)
    d = diagnose(src, line, T1, path="pkg/model.py", project=Project([tmp_path]))
    assert (d.culprit.expr, d.culprit.kind) == ("self.scale", "plain-tensor-attribute")
    assert d.culprit.made_at.startswith("pkg/base.py:6  self.scale = torch.ones(3)")
    # without the project, the base is unknown: the answer stays open rather than guessing
    assert diagnose(src, line, T1, path="pkg/model.py").culprit is None


def test_an_import_never_leaves_the_project(tmp_path):
    """`from secret import X` is not looked for above the folder the code lives in."""
    from samedevice.analysis.project import Project

    _file(tmp_path, "secret.py", "class X:\n    pass\n")
    inner = _file(tmp_path, "proj/app/main.py", "from secret import X\n")
    src = _parse(inner, "main.py")
    assert Project([tmp_path / "proj"]).find_class(src, "X") is None
    assert Project([tmp_path]).find_class(src, "X") is not None  # a root the user named


def test_the_callers_frame_says_where_a_parameter_came_from():
    from samedevice.analysis.culprit import diagnose_caller

    code = textwrap.dedent('''
        import torch

        def loss_fn(pred, target):
            return (pred - target).abs().mean()  # INNER

        def train(model, loader):
            for x, y in loader:
                pred = model(x.cuda())
                weights = torch.ones(4)
                loss = loss_fn(pred, weights)  # OUTER
    ''')
    src = SourceFile(ast.parse(code), "train.py", code)
    lines = code.splitlines()
    inner = diagnose(src, next(i for i, t in enumerate(lines, 1) if "# INNER" in t), T1, path="train.py")
    assert inner.culprit is None and ("operand", "target") in inner.parameters
    outer = diagnose_caller(src, next(i for i, t in enumerate(lines, 1) if "# OUTER" in t), T1, inner, path="train.py")
    assert (outer.culprit.expr, outer.culprit.kind) == ("weights", "factory-without-device")
    assert made_line(outer) == 10


def test_the_line_is_found_by_the_code_the_traceback_printed():
    from samedevice.analysis.culprit import locate_line

    code = "a = 1\nb = 2\nloss = crit(out, y)\n"
    src = SourceFile(ast.parse(code), "x.py", code)
    assert locate_line(src, 1, "loss = crit(out,  y)") == 3
    assert locate_line(src, 3, "loss = crit(out, y)") == 3
    assert locate_line(src, 2, "not in this file") == 2


def test_casts_keep_the_receivers_device_and_a_cpu_type_moves_it():
    d = run('''
        import torch
        def f(x):
            m = torch.zeros(3).to(torch.float16).fill_(1)
            return x * m  # FAIL
    ''', "# FAIL")
    assert (d.culprit.kind, made_line(d)) == ("factory-without-device", 4)
    d = run('''
        import torch
        def f(x, words):
            idx = words.type(torch.LongTensor)
            return x * idx  # FAIL
    ''', "# FAIL")
    assert (d.culprit.expr, d.culprit.kind) == ("idx", "cpu-device-string")


def test_an_index_is_a_device_bound_argument_and_a_plain_object_has_no_buffers():
    """T6: the index's family is F9 whatever made it; a tensor in a plain (non-Module) object is
    its factory's fault, not a missing register_buffer."""
    t6 = {"template": "T6", "op": "", "argument": "", "devices": ["cpu"], "message": ""}
    d = run('''
        import torch
        class Env:
            def __init__(self, n):
                self.obs = torch.zeros(n, n)
            def step(self, x):
                return self.obs[x]  # FAIL
    ''', "# FAIL", t6)
    assert (d.culprit.expr, d.culprit.kind, d.culprit.family) == ("self.obs", "factory-without-device", "F9")


def test_class_weights_of_a_loss_made_on_the_cpu():
    d = run('''
        import torch
        from torch import nn
        weights = torch.tensor([1.0, 3.0])
        criterion = nn.CrossEntropyLoss(weight=weights)
        def step(model, x, y):
            return criterion(model(x), y)  # FAIL
    ''', "# FAIL", {**T1, "op": "nll_loss_forward", "op_base": "nll_loss_forward", "argument": "weight",
                    "argument_device": "cpu"})
    assert (d.culprit.expr, d.culprit.kind, d.culprit.family) == ("criterion", "loss-weight-on-cpu", "F3")
    assert made_line(d) == 5


def test_a_value_the_live_program_has_on_the_cpu_skips_the_moves_that_did_not_run():
    from samedevice.analysis.culprit import origin_on_cpu

    code = textwrap.dedent('''
        def train(loader, model, gpu):
            for images, target in loader:
                images = images.cuda()
                if gpu is None:
                    target = target.cuda()
                loss = model(images) - target  # FAIL
    ''')
    src = SourceFile(ast.parse(code), "t.py", code)
    line = next(i for i, t in enumerate(code.splitlines(), 1) if "# FAIL" in t)
    assert diagnose(src, line, T1, path="t.py").culprit is None  # the code alone: target was moved
    c = origin_on_cpu(src, line, "target", T1, path="t.py")
    assert (c.kind, int(c.made_at.split("  ")[0].rsplit(":", 1)[1])) == ("input-not-moved", 3)


def test_the_batch_part_a_tuple_assignment_leaves_unmoved():
    """nanoGPT's get_batch shape: `x, y = x.to(device), y` moves one part of the batch; the
    other is the culprit at that statement, through the caller's unpacking."""
    d = run('''
        import torch
        data = torch.arange(100)

        def get_batch():
            ix = torch.randint(90, (4,))
            x = torch.stack([data[i:i + 8] for i in ix])
            y = torch.stack([data[i + 1:i + 9] for i in ix])
            x, y = x.to("cuda"), y
            return x, y

        def step(model):
            X, Y = get_batch()
            return model(X) - Y  # FAIL
    ''', "# FAIL")
    assert (d.culprit.expr, d.culprit.kind, made_line(d)) == ("Y", "input-not-moved", 9)


def test_a_local_functions_parameter_is_what_its_call_passed():
    d = run('''
        import torch

        def scale(values, factor):
            return values * factor

        def step(x):
            w = scale(torch.ones(3), 2.0)
            return x * w  # FAIL
    ''', "# FAIL")
    assert (d.culprit.expr, d.culprit.kind, made_line(d)) == ("w", "factory-without-device", 8)


def test_a_torch_function_result_is_on_its_arguments_device():
    d = run('''
        import torch
        class Attn(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.mask = torch.triu(torch.ones(n, n), diagonal=1)
            def forward(self, scores):
                return scores.masked_fill(self.mask.bool(), 0.0)  # FAIL
    ''', "# FAIL", {**T1, "op": "masked_fill", "op_base": "masked_fill", "argument": "mask", "argument_device": "cpu"})
    assert (d.culprit.kind, made_line(d)) == ("plain-tensor-attribute", 6)


T12_TWO_GPUS = {"template": "T12", "op": "", "argument": "", "devices": ["cuda:1", "cuda:0"], "message": ""}


def test_a_device_index_fixed_in_the_code_when_the_message_names_two_gpus():
    d = run('''
        import torch.nn.functional as F

        def train(model, loader, rank):
            for source, targets in loader:
                source = source.to(rank)
                targets = targets.to("cuda:0")
                loss = F.cross_entropy(model(source), targets)  # FAIL
    ''', "# FAIL", T12_TWO_GPUS)
    assert (d.culprit.expr, d.culprit.kind, d.culprit.family) == ("targets", "hardcoded-device-index", "F8")
    assert made_line(d) == 7


def test_a_fixed_device_index_is_no_origin_when_the_other_side_is_the_cpu():
    # one GPU and the CPU: "cuda:0" is where the model is too, so it is no culprit
    d = run('''
        import torch.nn.functional as F

        def train(model, loader):
            for source, targets in loader:
                source = source.to("cuda:0")
                loss = F.cross_entropy(model(source), targets)  # FAIL
    ''', "# FAIL")
    assert d.culprit is None or d.culprit.expr != "source"


def test_the_batch_part_left_unmoved_after_its_sibling_was_moved():
    d = run('''
        def train(model, loader, loss_fn, device):
            seq_batch, target_batch = next(iter(loader))
            seq_batch = seq_batch.to(device)
            loss = loss_fn(model(seq_batch), target_batch[:, 0])  # FAIL
    ''', "# FAIL")
    assert (d.culprit.expr, d.culprit.kind) == ("target_batch[:, 0]", "input-not-moved")
    assert made_line(d) == 4  # where the batch's other part was moved, and this one was not


def test_a_function_that_moves_one_of_the_values_it_returns():
    d = run('''
        import torch

        def get_batch(data, device):
            x = torch.stack([data[i:i + 8] for i in range(4)])
            y = torch.stack([data[i + 1:i + 9] for i in range(4)])
            x = x.to(device)
            return x, y

        def step(model, data, device):
            xb, yb = get_batch(data, device)
            return model(xb) - yb  # FAIL
    ''', "# FAIL")
    assert (d.culprit.expr, d.culprit.kind) == ("yb", "input-not-moved")
    assert made_line(d) == 7


def test_a_binding_whose_value_reads_a_name_the_live_frame_lacks_did_not_run():
    code = textwrap.dedent('''
        import os
        import torch

        samp = torch.from_numpy(make()).float()
        if os.path.exists("ckpt.pth"):
            checkpoint = torch.load("ckpt.pth")
            samp = checkpoint["samp"]
        out = model(samp)  # FAIL
    ''')
    src = SourceFile(ast.parse(code), "t.py", code)
    line = next(i for i, t in enumerate(code.splitlines(), 1) if "# FAIL" in t)
    names = {"os", "torch", "samp", "model", "make"}  # no `checkpoint`: the branch was not taken
    d = diagnose(src, line, T1, path="t.py", bound=lambda name, module: name in names)
    assert (d.culprit.expr, d.culprit.kind, made_line(d)) == ("samp", "transfer-to-cpu", 5)
    assert made_line(diagnose(src, line, T1, path="t.py")) == 7  # the code alone: the last binding


def test_states_given_as_a_tuple_through_a_detaching_helper():
    d = run('''
        import torch

        def detach(states):
            return [state.detach() for state in states]

        def train(model, batches):
            states = (torch.zeros(2, 4, 8), torch.zeros(2, 4, 8))
            for inputs in batches:
                states = detach(states)
                outputs = model.lstm(inputs, states)  # FAIL
    ''', "# FAIL")
    assert (d.culprit.expr, d.culprit.kind, made_line(d)) == ("states", "factory-without-device", 8)


def test_a_method_of_a_local_object_that_cannot_know_the_device_blames_its_call():
    d = run('''
        import torch
        from torch import nn

        class Recognition(nn.Module):
            def init_hidden(self):
                return torch.zeros(1, 25)

            def forward(self, x, h):
                return x + h

        def train(x, device):
            rec = Recognition().to(device)
            h = rec.init_hidden()
            return x.to(device) * h  # FAIL
    ''', "# FAIL")
    assert (d.culprit.expr, d.culprit.kind, made_line(d)) == ("h", "factory-without-device", 14)


def test_a_method_of_an_object_whose_class_is_in_another_file_is_read_there(tmp_path):
    """pytorch/examples word_language_model's shape: `model = model.RNNModel(...)` from model.py;
    its `init_hidden` reads `next(self.parameters())`, so it could know the device: the factory
    inside it is the culprit, named in model.py (not at main.py's line of the same number)."""
    from samedevice.analysis.project import Project

    _file(tmp_path, "model.py", '''
        import torch
        from torch import nn

        class RNNModel(nn.Module):
            def init_hidden(self, bsz):
                weight = next(self.parameters())
                return torch.zeros(1, bsz, 8)
    ''')
    main = _file(tmp_path, "main.py", '''
        import torch
        import model

        net = model.RNNModel().to("cuda")
        hidden = net.init_hidden(4)
        out = net.rnn(torch.ones(1, 4, 8, device="cuda"), hidden)  # FAIL
    ''')
    src = _parse(main, "main.py")
    line = next(i for i, t in enumerate(src.lines, 1) if "# FAIL" in t)
    d = diagnose(src, line, T1, path="main.py", project=Project([tmp_path]))
    assert (d.culprit.expr, d.culprit.kind) == ("hidden", "factory-without-device")
    assert d.culprit.made_at.startswith("model.py:8  return torch.zeros(1, bsz, 8)")


def test_a_function_of_another_file_is_followed_and_its_parameter_back_to_the_caller(tmp_path):
    """A helper imported from the project's utils.py returns its argument reshaped: the value is
    followed into that file and, through the parameter, back to the caller's factory."""
    from samedevice.analysis.project import Project

    _file(tmp_path, "utils.py", '''
        def batchify(data, bsz):
            data = data.view(bsz, -1).t().contiguous()
            return data
    ''')
    main = _file(tmp_path, "main.py", '''
        import torch
        from torch import nn
        from utils import batchify

        emb = nn.Embedding(10, 4).to("cuda")
        train = batchify(torch.arange(100) % 10, 4)
        out = emb(train)  # FAIL
    ''')
    src = _parse(main, "main.py")
    line = next(i for i, t in enumerate(src.lines, 1) if "# FAIL" in t)
    d = diagnose(src, line, T1, path="main.py", project=Project([tmp_path]))
    assert (d.culprit.expr, d.culprit.kind) == ("train", "factory-without-device")
    assert d.culprit.made_at.startswith("main.py:7  train = batchify(torch.arange(100) % 10, 4)")
    assert any("returned by `batchify`" in step for step in d.culprit.chain)


def test_a_collectives_fix_names_the_ranks_gpu_not_a_constant_argument():
    # pytorch/examples#1030: the fix used to read "pass `device=dist.ReduceOp.SUM.device`"
    d = run('''
        import torch
        import torch.distributed as dist

        def all_reduce(total_sum, count):
            total = torch.FloatTensor([total_sum, count])
            dist.all_reduce(total, dist.ReduceOp.SUM, async_op=False)
    ''', "dist.all_reduce", {"template": "T7", "op": "", "argument": "", "devices": ["cpu"],
                            "message": "No backend type associated with device type cpu"})
    assert (d.culprit.expr, d.culprit.kind, made_line(d)) == ("total", "factory-without-device", 6)
    assert "ReduceOp" not in d.culprit.fix
    assert "device=torch.cuda.current_device()" in d.culprit.fix


def test_the_fix_still_takes_the_device_of_the_other_tensor_when_a_constant_is_in_the_statement():
    d = run('''
        import torch

        SCALE = 2.0

        def f(x):
            noise = torch.randn(3)
            return x + noise * SCALE
    ''', "return x + noise")
    assert d.culprit.expr == "noise"
    assert "`device=x.device`" in d.culprit.fix
