"""Where the diagnosis says a CPU operand came from, for the sources the failing statement alone
does not show: the tensor an index op writes into, a running total, an array converted with
``torch.from_numpy`` (and a new tensor over its memory), data a loader function returned, and a
device the object was built without."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def diagnose(tmp_path, code: str) -> dict:
    (tmp_path / "prog.py").write_text(textwrap.dedent(code))
    r = subprocess.run([sys.executable, "-m", "samedevice", "run", "--diagnosis-json", "d.json", "prog.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert r.returncode == 1, r.stderr
    return json.loads((tmp_path / "d.json").read_text())


def test_the_tensor_an_index_op_writes_into_is_an_operand(tmp_path):
    d = diagnose(tmp_path, '''
        import torch
        idx = torch.tensor([0, 2], device="cuda")
        src = torch.ones(2, 3, device="cuda")
        out = torch.zeros(4, 3)
        out.index_add_(0, idx, src)
    ''')
    assert d["statement"] == "out.index_add_(0, idx, src)"
    assert {"expr": "out", "role": "self", "device": "cpu"} in d["operands"]
    assert (d["culprit"]["expr"], d["culprit"]["made_at"]) == ("out", "prog.py:5  out = torch.zeros(4, 3)")
    assert d["culprit"]["kind"] == "factory-without-device"


def test_a_running_total_is_an_operand_of_its_augmented_assignment(tmp_path):
    d = diagnose(tmp_path, '''
        import torch


        def accuracy(batches):
            correct = torch.zeros(1)
            for x in batches:
                correct += (x > 0).sum()
            return correct


        accuracy([torch.ones(3, device="cuda")])
    ''')
    assert d["statement"] == "correct += (x > 0).sum()"
    assert (d["culprit"]["expr"], d["culprit"]["made_at"]) == ("correct", "prog.py:6  correct = torch.zeros(1)")


def test_an_array_converted_unmoved_is_named_through_a_new_tensor_over_its_memory(tmp_path):
    """``Variable(x[i:j])`` makes a tensor no torch function mode sees; it shares the memory of
    the slice of ``x``, which ``torch.from_numpy`` made at line 6."""
    d = diagnose(tmp_path, '''
        import numpy as np
        import torch
        from torch.autograd import Variable

        data = torch.from_numpy(np.ones((4, 3), dtype=np.float32))
        model = torch.nn.Linear(3, 2).cuda()
        batch = Variable(data[0:2])
        model(batch)
    ''')
    assert d["culprit"]["expr"] == "batch"
    assert d["culprit"]["made_at"] == "prog.py:6  data = torch.from_numpy(np.ones((4, 3), dtype=np.float32))"


def test_data_a_returned_loader_made_is_named_at_the_call_that_brought_it_in(tmp_path):
    d = diagnose(tmp_path, '''
        import numpy as np
        import torch


        def load(n):
            raw = torch.FloatTensor(np.ones((n, 3)))
            scale = 1 / raw.sum(dim=1)
            return scale[:, None] * raw, torch.arange(n)


        features, labels = load(4)
        model = torch.nn.Linear(3, 2).cuda()
        model(features)
    ''')
    assert (d["culprit"]["expr"], d["culprit"]["kind"], d["family"]) == ("features", "input-not-moved", "F3")
    assert d["culprit"]["made_at"] == "prog.py:12  features, labels = load(4)"


def test_a_device_the_model_was_built_without_is_named_at_the_outermost_call_that_left_it_out(tmp_path):
    """``Encoder`` places its positions on ``self.device``, its ``device`` argument, which
    ``Net`` passes on from its own; ``Net()`` is built without it, so the default "cpu" is used.
    The modules' ``device`` attributes say "cpu" while their weights are on the GPU: where a
    module is, is where its weights are."""
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn


        class Encoder(nn.Module):
            def __init__(self, device="cpu"):
                super().__init__()
                self.device = device
                self.emb = nn.Embedding(8, 4)

            def forward(self, n):
                positions = torch.arange(n).to(self.device)
                return self.emb(positions)


        class Net(nn.Module):
            def __init__(self, size=4, device="cpu"):
                super().__init__()
                self.encoder = Encoder(device)

            def forward(self, n):
                return self.encoder(n)


        model = Net(4).to("cuda")
        model(3)
    ''')
    assert d["statement"] == "return self.emb(positions)"
    assert (d["culprit"]["expr"], d["culprit"]["kind"]) == ("positions", "device-argument-omitted")
    assert d["culprit"]["made_at"] == 'prog.py:26  model = Net(4).to("cuda")'
    assert "device=device" in d["culprit"]["fix"]


def test_of_two_operands_on_the_cpu_the_one_python_evaluates_first_is_the_culprit(tmp_path):
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn


        class Norm(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.ones(3)
                self.shift = torch.zeros(3)

            def forward(self, x):
                return self.scale * x + self.shift


        Norm().cuda()(torch.ones(3, device="cuda"))
    ''')
    assert (d["culprit"]["expr"], d["culprit"]["made_at"]) == ("self.scale", "prog.py:9  self.scale = torch.ones(3)")


def test_a_move_whose_result_is_dropped_is_named_where_it_was_dropped(tmp_path):
    d = diagnose(tmp_path, '''
        import torch

        model = torch.nn.Linear(3, 2).cuda()
        for x in [torch.ones(2, 3)]:
            x.to("cuda")
            model(x)
    ''')
    assert (d["culprit"]["expr"], d["culprit"]["kind"]) == ("x", "move-result-discarded")
    assert d["culprit"]["made_at"] == 'prog.py:6  x.to("cuda")'
    assert d["culprit"]["fix"] == "keep the result: `x = x.to(device)`"


def test_a_model_a_checkpoint_moved_to_the_cpu_is_named_at_that_move_through_its_alias(tmp_path):
    """``raw = model`` names the same model; ``raw.cpu()`` in the checkpoint step took it off the
    GPU, and the next step meets GPU data."""
    d = diagnose(tmp_path, '''
        import io
        import torch

        model = torch.nn.Linear(3, 2)
        model.to("cuda")
        raw = model
        for step in range(2):
            out = raw(torch.ones(1, 3, device="cuda"))
            if step == 0:
                torch.save(raw.cpu().state_dict(), io.BytesIO())
    ''')
    assert (d["culprit"]["kind"], d["family"]) == ("model-moved-to-cpu", "F6")
    assert d["culprit"]["made_at"] == "prog.py:11  torch.save(raw.cpu().state_dict(), io.BytesIO())"


def test_a_generator_on_the_other_device_is_named_where_it_was_made(tmp_path):
    d = diagnose(tmp_path, '''
        import torch

        weights = torch.ones(5)
        generator = torch.Generator(device="cuda").manual_seed(0)
        torch.multinomial(weights, 1, generator=generator)
    ''')
    assert d["template"] == "T8"
    assert (d["culprit"]["expr"], d["culprit"]["kind"], d["family"]) == ("generator", "generator-on-other-device", "F9")
    assert d["culprit"]["made_at"].startswith("prog.py:5  generator = torch.Generator(device=\"cuda\")")


def test_a_keyword_only_device_argument_is_followed_to_the_call_that_left_it_out(tmp_path):
    """``Net`` takes its device as a keyword-only argument and passes it on by keyword; the
    script builds ``Net`` without it."""
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn


        class Encoder(nn.Module):
            def __init__(self, size, *, device="cpu"):
                super().__init__()
                self.device = device
                self.emb = nn.Embedding(8, size)

            def forward(self, n):
                positions = torch.arange(n, device=self.device)
                return self.emb(positions)


        class Net(nn.Module):
            def __init__(self, size, *, device="cpu"):
                super().__init__()
                self.encoder = Encoder(size, device=device)

            def forward(self, n):
                return self.encoder(n)


        model = Net(4).to("cuda")
        model(3)
    ''')
    assert (d["culprit"]["expr"], d["culprit"]["kind"]) == ("positions", "device-argument-omitted")
    assert d["culprit"]["made_at"] == 'prog.py:26  model = Net(4).to("cuda")'


def test_of_two_calls_building_the_object_the_one_that_ran_is_named(tmp_path):
    """The script builds the model in ``main`` (without its device) and has a helper further
    down, never called, that builds it right: the call that ran is the culprit, not the last
    one in the file."""
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self, device="cpu"):
                super().__init__()
                self.device = device
                self.emb = nn.Embedding(8, 4)

            def forward(self, n):
                positions = torch.arange(n).to(self.device)
                return self.emb(positions)


        def main():
            model = Net().to("cuda")
            return model(3)


        def for_the_gpu():
            return Net(device="cuda").to("cuda")


        main()
    ''')
    assert d["culprit"]["kind"] == "device-argument-omitted"
    assert d["culprit"]["made_at"] == 'prog.py:18  model = Net().to("cuda")'


def test_an_operand_written_as_a_call_is_read_from_the_frame_it_was_passed_into(tmp_path):
    """``self.emb(torch.arange(n).to(self.device))``: the index has no name to read in the
    failing frame; the embedding's frame received it, and the machine saw it made on this line."""
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self, device="cpu"):
                super().__init__()
                self.device = device
                self.emb = nn.Embedding(8, 4)

            def forward(self, n):
                return self.emb(torch.arange(n).to(self.device))


        Net().to("cuda")(3)
    ''')
    ops = {o["expr"]: o["device"] for o in d["operands"]}
    assert ops == {"self.emb": "cuda:0", "torch.arange(n).to(self.device)": "cpu"}
    assert (d["culprit"]["expr"], d["culprit"]["kind"]) == ("torch.arange(n).to(self.device)",
                                                            "device-argument-omitted")
    assert d["culprit"]["made_at"] == 'prog.py:16  Net().to("cuda")(3)'


def test_a_helper_that_made_the_value_from_sizes_is_named_at_its_factory(tmp_path):
    """``recall_weights`` (in a package the script reaches through ``sys.path``, as TCN's
    scripts do, so the code alone does not follow it) builds its weights with ``torch.zeros(n)``:
    no data the program read, so the device belongs to that factory, not to the call that
    brought the weights in (as it does for a loader's data, above)."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "helpers.py").write_text(textwrap.dedent('''
        import torch


        def recall_weights(n):
            w = torch.zeros(n)
            w[-2:] = 1.0
            return w
    '''))
    (tmp_path / "app").mkdir()
    d = diagnose(tmp_path / "app", '''
        import sys
        import torch
        sys.path.append("..")
        from lib.helpers import recall_weights

        weights = recall_weights(6)
        loss = torch.rand(6, device="cuda")
        print((loss * weights).sum())
    ''')
    assert (d["culprit"]["expr"], d["culprit"]["kind"]) == ("weights", "factory-without-device")
    assert d["culprit"]["made_at"].endswith("helpers.py:6  w = torch.zeros(n)")


def test_of_a_model_built_in_either_branch_of_an_if_the_branch_that_built_it_is_named(tmp_path):
    """``model = Transformer(...)`` if one flag, else ``model = Recurrent(...)``: the live model is
    a ``Transformer``, so its branch is where it was built (the last binding by line is the other)."""
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn


        class Transformer(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(8, 4)

            def forward(self, x):
                return self.emb(x)


        class Recurrent(Transformer):
            pass


        kind = "transformer"
        if kind == "transformer":
            model = Transformer()
        else:
            model = Recurrent()
        model(torch.arange(3, device="cuda"))
    ''')
    assert d["culprit"]["kind"] == "model-not-moved"
    assert d["culprit"]["made_at"] == "prog.py:21  model = Transformer()"


def test_a_model_restored_onto_the_gpu_that_saved_it_is_named_at_its_torch_load(tmp_path):
    """Saved from cuda:0, loaded without ``map_location`` by a process whose device is cuda:1:
    the model is back on cuda:0 and meets cuda:1's input (as each DDP rank but the first does)."""
    (tmp_path / "prog.py").write_text(textwrap.dedent('''
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.Sequential(nn.Linear(2, 2))

            def forward(self, x):
                return self.layers(x)


        model = Net().to("cuda:0")  # an earlier binding of the name, by another call: not this one
        torch.save(model, "model.pth")


        def accuracy(model, x):
            return model(x).argmax()


        rank = 1
        torch.cuda.set_device(rank)
        model = torch.load("model.pth", weights_only=False)
        accuracy(model, torch.ones(1, 2).to(rank))
    '''))
    r = subprocess.run([sys.executable, "-m", "samedevice", "run", "--gpus", "2", "--diagnosis-json", "d.json",
                        "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert r.returncode == 1, r.stderr
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["template"] == "T12"
    assert d["culprit"]["kind"] == "torch-load-no-map-location"
    assert d["culprit"]["made_at"] == 'prog.py:24  model = torch.load("model.pth", weights_only=False)'


def test_a_model_moved_to_the_cpu_to_save_it_is_named_there_through_the_tracebacks_line(tmp_path):
    """``torch.save(model.to("cpu"), f)`` at the end of each epoch moves the model itself. The
    epoch loop is in a ``try`` whose ``except`` the error passed through: that frame's line is
    the ``except`` clause, the traceback's is the call."""
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn

        model = nn.Sequential(nn.Linear(2, 2)).to("cuda")


        def train():
            return model(torch.ones(1, 2, device="cuda"))


        try:
            for epoch in range(2):
                train()
                torch.save(model.to("cpu"), "model.pth")
        except KeyboardInterrupt:
            pass
    ''')
    assert d["culprit"]["kind"] == "model-moved-to-cpu"
    assert d["culprit"]["made_at"] == 'prog.py:15  torch.save(model.to("cpu"), "model.pth")'


def test_a_cpu_checkpoint_loaded_with_assign_replaces_the_moved_parameters(tmp_path):
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn

        model = nn.Sequential(nn.Linear(2, 2))
        torch.save(model.state_dict(), "model.pth")
        model.to("cuda")
        model.load_state_dict(torch.load("model.pth", map_location="cpu"), assign=True)
        model(torch.ones(1, 2, device="cuda"))
    ''')
    assert (d["culprit"]["kind"], d["family"]) == ("restored-on-cpu", "F7")
    assert d["culprit"]["made_at"].startswith("prog.py:8  model.load_state_dict(")


def test_a_tensor_an_init_stored_on_self_is_a_plain_attribute_not_data(tmp_path):
    """``self.pos_ids = torch.arange(n)`` in ``__init__``, sliced in ``forward`` into a local:
    the module's own state, which ``.to()`` did not move, not data the call that built the
    model brought in."""
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(8, 4)
                self.pos_ids = torch.arange(8)

            def forward(self, n, use_cache=True):
                if use_cache:
                    pos_ids = self.pos_ids[:n]
                else:
                    pos_ids = torch.arange(n, device=self.emb.weight.device)
                return self.emb(pos_ids)


        model = Net().to("cuda")
        model(3)
    ''')
    assert (d["culprit"]["expr"], d["culprit"]["kind"]) == ("pos_ids", "plain-tensor-attribute")
    assert d["culprit"]["made_at"] == "prog.py:10  self.pos_ids = torch.arange(8)"


def test_layers_iterated_from_a_plain_list_are_named_where_the_list_was_made(tmp_path):
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.first = nn.Linear(2, 2)
                self.blocks = [nn.Sequential(nn.Linear(2, 2)) for _ in range(2)]

            def forward(self, x):
                x = self.first(x)
                for block in self.blocks:
                    x = block(x)
                return x


        Net().to("cuda")(torch.ones(1, 2, device="cuda"))
    ''')
    assert d["culprit"]["kind"] == "modules-in-plain-list"
    assert d["culprit"]["made_at"] == "prog.py:10  self.blocks = [nn.Sequential(nn.Linear(2, 2)) for _ in range(2)]"


def test_a_batch_moved_to_a_device_read_from_the_model_before_its_move_is_named_at_that_read(tmp_path):
    d = diagnose(tmp_path, '''
        import torch
        from torch import nn


        class Trainer:
            def __init__(self, model):
                self.device = next(model.parameters()).device
                self.model = model.to("cuda")

            def step(self, x):
                return self.model(x)

            def epoch(self, batches):
                for x in batches:
                    x = x.to(self.device)
                    self.step(x)


        Trainer(nn.Linear(2, 2)).epoch([torch.ones(1, 2)])
    ''')
    assert (d["culprit"]["kind"], d["family"]) == ("device-read-before-move", "F3")
    assert d["culprit"]["made_at"] == "prog.py:8  self.device = next(model.parameters()).device"
