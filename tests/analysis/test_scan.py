"""A paste with no line of the user's code: the places in a checkout where it can happen."""

from __future__ import annotations

import textwrap

from samedevice.analysis.scan import python_files, scan

CAT = {"template": "T1", "op": "cat", "op_base": "cat", "argument": "tensors", "devices": ["cuda:0", "cpu"],
       "message": ""}


def write(root, name, code):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code))
    return path


def test_the_op_of_the_message_picks_the_statement(tmp_path):
    write(tmp_path, "pkg/utils.py", '''
        import torch
        def pad(x):
            pad = torch.zeros(x.shape[0], 3)
            y = x * 2
            return torch.cat([x, pad], dim=1)
    ''')
    write(tmp_path, "pkg/other.py", '''
        import torch
        def scale(x):
            return x * torch.ones(3)
    ''')
    found, notes = scan([tmp_path], CAT)
    assert [(c.path, c.line, c.culprit.expr) for c in found] == [("pkg/utils.py", 6, "pad")]
    assert found[0].culprit.made_at == "pkg/utils.py:4  pad = torch.zeros(x.shape[0], 3)"
    assert notes == []


def test_sure_kinds_rank_before_a_factory(tmp_path):
    write(tmp_path, "m.py", '''
        import torch
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.ones(3)

            def forward(self, x):
                b = torch.arange(3)
                y = x * b
                return y + x * self.scale
    ''')
    found, _ = scan([tmp_path], {"template": "T1", "op": "", "argument": "", "devices": [], "message": ""})
    assert [(c.line, c.culprit.kind) for c in found] == [(11, "plain-tensor-attribute"),
                                                         (10, "factory-without-device")]


def test_virtualenvs_links_out_and_unparsable_files_are_left_out(tmp_path):
    outside = tmp_path / "outside"
    write(outside, "evil.py", "import torch\nx = torch.zeros(1) + y\n")
    root = tmp_path / "proj"
    write(root, ".venv/lib/site.py", "x = 1\n")
    write(root, "bad.py", "def f(:\n")
    write(root, "ok.py", "x = 1\n")
    (root / "link.py").symlink_to(outside / "evil.py")
    assert [p.name for p in python_files(root)] == ["bad.py", "ok.py"]
    found, notes = scan([root], {"template": "T1", "op": "", "argument": "", "devices": [], "message": ""})
    assert found == [] and notes == ["bad.py: skipped, not valid Python for this interpreter"]


def test_progress_is_reported_per_file(tmp_path):
    for i in range(3):
        write(tmp_path, f"m{i}.py", "x = 1\n")
    seen = []
    scan([tmp_path], CAT, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]
