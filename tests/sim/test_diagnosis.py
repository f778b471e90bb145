"""The diagnosis after a device error in a live program: `samedevice run` and the pytest plugin
print, after CUDA's unchanged traceback, each operand of the failing statement with its device,
the culprit with the line that made it, the fix and the family's page."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent('''
    import torch
    from torch import nn


    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.scale = torch.ones(3)

        def forward(self, x):
            return self.lin(x) * self.scale


    torch.manual_seed(0)
    model = Scaled().to("cuda")
    print("out", model(torch.ones(2, 3, device="cuda")).sum().item())
''')
CORRECT = PROGRAM.replace("self.scale = torch.ones(3)", 'self.register_buffer("scale", torch.ones(3))')


def run(tmp_path, code: str, *extra: str) -> subprocess.CompletedProcess:
    prog = tmp_path / "prog.py"
    prog.write_text(code)
    return subprocess.run([sys.executable, "-m", "samedevice", "run", *extra, "prog.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=240)


def test_run_names_the_culprit_after_the_unchanged_traceback(tmp_path):
    r = run(tmp_path, PROGRAM)
    assert r.returncode == 1
    traceback, _, diagnosis = r.stderr.partition("samedevice: T1 ")
    assert traceback.rstrip().endswith("RuntimeError: Expected all tensors to be on the same device, "
                                       "but found at least two devices, cuda:0 and cpu!")
    lines = [" ".join(line.split()) for line in diagnosis.splitlines()]
    assert "at prog.py:13 in forward: return self.lin(x) * self.scale" in lines
    assert "self.scale cpu (operand)" in lines
    assert "culprit: self.scale, made at prog.py:10 self.scale = torch.ones(3)" in lines
    assert any(line.startswith("fix: register it:") for line in lines)
    assert any(line.startswith("family: F2 Unregistered state") and "families/f2/" in line for line in lines)


def test_a_correct_program_prints_no_diagnosis_and_the_same_output(tmp_path):
    r = run(tmp_path, CORRECT)
    assert r.returncode == 0, r.stderr
    assert "samedevice:" not in r.stderr
    cpu = run(tmp_path, CORRECT, "--cpu")
    assert r.stdout == cpu.stdout


def test_no_diagnosis_leaves_cudas_traceback_alone(tmp_path):
    r = run(tmp_path, PROGRAM, "--no-diagnosis")
    assert r.returncode == 1 and "samedevice:" not in r.stderr
    assert r.stderr.rstrip().endswith("cuda:0 and cpu!")


def test_the_pytest_plugin_adds_the_diagnosis_to_the_failure(tmp_path):
    (tmp_path / "model.py").write_text(PROGRAM.split("\n\ntorch.manual_seed")[0] + "\n")
    (tmp_path / "test_model.py").write_text(textwrap.dedent('''
        import torch
        from model import Scaled

        def test_forward():
            Scaled().to("cuda")(torch.ones(2, 3, device="cuda"))
    '''))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--sim-device=cuda",
                        "test_model.py"], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert r.returncode == 1
    section = r.stdout.split("samedevice diagnosis")[1]
    assert "culprit: self.scale, made at model.py:10" in " ".join(section.split())


def test_the_run_page_shows_what_run_prints(tmp_path):
    """The example on docs/run-gpu-code-on-cpu.md is executed: its output block is what
    `samedevice run` prints after the traceback, line for line."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "run-gpu-code-on-cpu.md").read_text()
    section = page.split("## From the error to the culprit line")[1].split("\n## ")[0]
    program = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    (tmp_path / "scaled.py").write_text(program)
    r = subprocess.run([sys.executable, "-m", "samedevice", "run", "scaled.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=240)
    assert "samedevice: T1" + r.stderr.split("samedevice: T1", 1)[1] == shown


def test_run_writes_the_same_diagnosis_as_json_for_tools(tmp_path):
    import json

    r = run(tmp_path, PROGRAM, "--diagnosis-json", "d.json")
    assert r.returncode == 1
    d = json.loads((tmp_path / "d.json").read_text())
    assert (d["template"], d["line"], d["statement"]) == ("T1", 13, "return self.lin(x) * self.scale")
    assert {"expr": "self.scale", "role": "operand", "device": "cpu"} in d["operands"]
    assert d["culprit"]["expr"] == "self.scale" and d["culprit"]["made_at"].startswith("prog.py:10  ")
    assert (d["culprit"]["kind"], d["family"]) == ("plain-tensor-attribute", "F2")
    # a correct program raises nothing: no file, and a stale one from an earlier run is removed
    (tmp_path / "d.json").write_text("{}")
    ok = run(tmp_path, CORRECT, "--diagnosis-json", "d.json")
    assert ok.returncode == 0 and not (tmp_path / "d.json").exists()
    bad = run(tmp_path, CORRECT, "--diagnosis-json", "nowhere/d.json")
    assert bad.returncode == 2 and "no such folder" in bad.stderr and "Traceback" not in bad.stderr


LAYER_ADDED_ELSEWHERE = textwrap.dedent('''
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 4)
            self.head = nn.Linear(4, 4)

        def forward(self, x):
            return self.head(self.body(x))


    def build():
        return Net().to("cuda")


    def replace_head(model):
        model.head = nn.Linear(4, 2)


    model = build()
    replace_head(model)
    print(model(torch.ones(1, 4, device="cuda")))
''')

STATIC_ORIGIN_ON_THE_GPU = textwrap.dedent('''
    import torch
    from torch import nn


    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.ones(3)

        def forward(self, x):
            return self.a * x


    m = Scale()
    m.a = m.a.cuda()
    print(m(torch.ones(3)))
''')


def test_a_layer_on_the_cpu_inside_a_moved_model_was_added_after_the_move(tmp_path):
    """The code alone does not connect `self.head` with `replace_head`; the live model does: its
    other parameters are on the GPU."""
    import json

    r = run(tmp_path, LAYER_ADDED_ELSEWHERE, "--diagnosis-json", "d.json")
    assert r.returncode == 1
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["culprit"]["expr"] == "self.head" and d["culprit"]["kind"] == "layer-created-after-move"
    assert d["culprit"]["made_at"] == "prog.py:21  model.head = nn.Linear(4, 2)"
    assert d["family"] == "F1"


def test_the_operand_on_the_cpu_decides_and_its_caller_says_where_it_came_from(tmp_path):
    """`self.a` is a plain attribute (a bug the code shows), but the program moved it by hand:
    the live values say `x` is the CPU operand, and the caller's frame shows where it was made."""
    import json

    r = run(tmp_path, STATIC_ORIGIN_ON_THE_GPU, "--diagnosis-json", "d.json")
    assert r.returncode == 1
    d = json.loads((tmp_path / "d.json").read_text())
    assert {"expr": "x", "role": "operand", "device": "cpu"} in d["operands"]
    assert d["culprit"]["expr"] == "x" and d["culprit"]["kind"] == "factory-without-device"
    assert d["culprit"]["made_at"] == "prog.py:17  print(m(torch.ones(3)))"
    assert d["statement"] == "return self.a * x"


THROUGH_TWO_CALLERS = textwrap.dedent('''
    import torch
    from torch import nn


    class Tokenizer:
        def encode(self, text, return_tensors=None):
            return torch.tensor([[ord(c) % 32 for c in text]])


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(32, 8)

        def forward(self, input_ids):
            return self.embed_tokens(input_ids)

        def generate(self, input_ids, steps=1):
            for _ in range(steps):
                out = self.forward(input_ids)
            return out


    model = LM().to("cuda")
    tok = Tokenizer()
    print(model.generate(tok.encode("hello", return_tensors="pt")))
''')


def test_a_parameter_is_followed_out_through_every_caller(tmp_path):
    """`input_ids` is a parameter of `forward`, then of `generate`: the culprit is what the
    outermost caller passed, a tokenizer's CPU output."""
    import json

    r = run(tmp_path, THROUGH_TWO_CALLERS, "--diagnosis-json", "d.json")
    assert r.returncode == 1
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["statement"] == "return self.embed_tokens(input_ids)"
    assert {"expr": "input_ids", "role": "index", "device": "cpu"} in d["operands"]
    assert d["culprit"]["expr"] == "input_ids" and d["culprit"]["kind"] == "input-not-moved"
    assert d["culprit"]["made_at"] == 'prog.py:27  print(model.generate(tok.encode("hello", return_tensors="pt")))'


RESUMED = textwrap.dedent('''
    import torch
    from torch import nn

    model = nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()
    checkpoint = {"optimizer": optimizer.state_dict()}

    model = nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    optimizer.load_state_dict(checkpoint["optimizer"])
    model.to("cuda")
    model(torch.ones(2, 4, device="cuda")).sum().backward()
    optimizer.step()
''')


def test_an_optimizer_restored_before_the_move_is_named_at_its_load_state_dict(tmp_path):
    # the error is raised deep in torch.optim; its operands (exp_avgs) are torch's, not the user's
    r = run(tmp_path, RESUMED)
    assert r.returncode == 1
    lines = [" ".join(line.split()) for line in r.stderr.partition("samedevice: T1 ")[2].splitlines()]
    assert "at prog.py:16 in <module>: optimizer.step()" in lines
    assert "optimizer state cpu; parameters cuda:0 (operand)" in lines
    assert 'culprit: optimizer, made at prog.py:13 optimizer.load_state_dict(checkpoint["optimizer"])' in lines
    assert any(line.startswith("family: F7 ") for line in lines)
    fixed = RESUMED.replace('model.to("cuda")\n', "").replace(
        "optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)\noptimizer.load",
        'model.to("cuda")\noptimizer = torch.optim.AdamW(model.parameters(), lr=0.1)\noptimizer.load')
    assert run(tmp_path, fixed).returncode == 0


RANKS = textwrap.dedent('''
    import torch
    import torch.multiprocessing as mp


    def work(rank):
        torch.cuda.set_device(rank)
        x = torch.ones(3, device=rank)
        scale = torch.full((3,), 2.0).to("cuda:0")
        print(rank, (x * scale).sum().item())


    if __name__ == "__main__":
        mp.spawn(work, nprocs=2)
''')


def test_a_rank_started_by_mp_spawn_is_diagnosed_after_the_parents_traceback(tmp_path):
    # the rank holds the failing frames; the parent raises ProcessRaisedException with its text
    r = run(tmp_path, RANKS, "--gpus", "2")
    assert r.returncode == 1
    traceback, _, diagnosis = r.stderr.partition("samedevice: T12 ")
    assert "ProcessRaisedException" in traceback and "cuda:1 and cuda:0" in traceback
    lines = [" ".join(line.split()) for line in diagnosis.splitlines()]
    assert "at prog.py:10 in work (process 1 of torch.multiprocessing.spawn): print(rank, (x * scale).sum().item())" in lines
    assert 'culprit: scale, made at prog.py:9 scale = torch.full((3,), 2.0).to("cuda:0")' in lines
    assert any(line.startswith("family: F8 ") for line in lines)


FROM_A_CACHE = textwrap.dedent('''
    import torch
    from torch import nn

    CACHE = {}


    def positions(n):
        if n not in CACHE:
            CACHE[n] = torch.arange(n)
        return CACHE[n]


    class Pos(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(16, 4)

        def forward(self, x):
            pos = positions(x.shape[1])
            return x + self.emb(pos)


    model = Pos().to("cuda")
    print(model(torch.zeros(2, 8, 4, device="cuda")))
''')


def test_where_the_live_program_made_the_operand_decides_what_the_code_cannot(tmp_path):
    """`pos` comes out of a dict the code fills at run time: the code alone cannot say what it
    holds; the simulated machine saw the tensor made by `torch.arange(n)` in `positions`, a helper
    the failing `forward` calls (so a factory of the computation, F4, not data left unmoved)."""
    import json

    r = run(tmp_path, FROM_A_CACHE, "--diagnosis-json", "d.json")
    assert r.returncode == 1
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["statement"] == "return x + self.emb(pos)"
    assert {"expr": "pos", "role": "index", "device": "cpu"} in d["operands"]
    assert d["culprit"]["expr"] == "pos"
    assert d["culprit"]["made_at"] == "prog.py:10  CACHE[n] = torch.arange(n)"
    assert (d["culprit"]["kind"], d["family"]) == ("factory-without-device", "F4")
