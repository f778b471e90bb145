"""explain reads the code a traceback names: the culprit from the user's files, a traceback from
another machine mapped onto a checkout (--source), --no-source, and files that cannot be read."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from conftest import run_cli

LOSS = textwrap.dedent('''
    import torch
    from torch import nn


    class Center(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.value = torch.zeros(1, dim)


    class DINOLoss(nn.Module):
        def __init__(self, dim=4):
            super().__init__()
            self._center = Center(dim)

        def forward(self, teacher_out):
            t = teacher_out - self._center.value
            return t.sum()
''')
ERROR = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


def paste(path: str, line: int = 18) -> bytes:
    return (f'Traceback (most recent call last):\n  File "{path}", line {line}, in forward\n'
            f"    t = teacher_out - self._center.value\n{ERROR}\n").encode()


def explain_json(*args: str, stdin: bytes) -> dict:
    r = run_cli(*args, "--json", stdin=stdin)
    assert r.returncode == 0, r.stderr.decode()
    assert b"Traceback" not in r.stderr
    return json.loads(r.stdout)


def test_the_culprit_from_a_file_on_this_disk(tmp_path):
    f = tmp_path / "dino_loss.py"
    f.write_text(LOSS)
    out = explain_json(stdin=paste(str(f)))
    assert out["culprit"]["expr"] == "self._center.value"
    assert out["culprit"]["made_at"] == f"{f}:9  self.value = torch.zeros(1, dim)"
    assert out["culprit"]["family"] == "F2" and out["families"][0] == "F2"
    assert "register" in out["culprit"]["fix"] or "buffer" in out["culprit"]["fix"]
    assert out["evidence"][0]["rule"] == "source-culprit"


def test_text_report_names_the_culprit_and_the_users_line(tmp_path):
    f = tmp_path / "dino_loss.py"
    f.write_text(LOSS)
    r = run_cli(stdin=paste(str(f)))
    text = " ".join(r.stdout.decode().split())
    assert "The culprit, from your code" in text
    assert f"`self._center.value` in {f}:18 t = teacher_out - self._center.value" in text
    assert f"made at {f}:9 self.value = torch.zeros(1, dim)" in text


def test_source_maps_another_machines_paths_by_their_longest_ending(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "lightly" / "loss").mkdir(parents=True)
    (checkout / "lightly" / "loss" / "dino_loss.py").write_text(LOSS)
    (checkout / "other").mkdir()
    (checkout / "other" / "dino_loss.py").write_text("x = 1\n")  # a shorter match must lose
    remote = "/home/someone/envs/py/lib/python3.10/site-packages/lightly/loss/dino_loss.py"
    out = explain_json("--source", str(checkout), stdin=paste(remote))
    assert out["culprit"]["expr"] == "self._center.value"
    assert out["culprit"]["made_at"].startswith("lightly/loss/dino_loss.py:9")


def test_windows_paths_map_too(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "dino_loss.py").write_text(LOSS)
    out = explain_json("--source", str(tmp_path), stdin=paste("C:\\Users\\me\\proj\\dino_loss.py"))
    assert out["culprit"]["expr"] == "self._center.value"


def test_no_source_reads_the_paste_only(tmp_path):
    f = tmp_path / "dino_loss.py"
    f.write_text(LOSS)
    out = explain_json("--no-source", stdin=paste(str(f)))
    assert out.get("culprit") is None and "code" not in out


def test_missing_source_folder_is_one_line(tmp_path):
    r = run_cli("--source", str(tmp_path / "nope"), stdin=paste("/x/y.py"))
    assert r.returncode == 2
    assert r.stderr.decode().strip().count("\n") == 0 and "not a folder" in r.stderr.decode()


@pytest.mark.parametrize("kind", ["binary", "syntax", "huge", "latin1", "directory", "fifo"])
def test_unreadable_sources_are_skipped_with_a_note(tmp_path, kind):
    f = tmp_path / "bad.py"
    if kind == "binary":
        f.write_bytes(b"\x00\x01\x02" * 100)
    elif kind == "syntax":
        f.write_text("def f(:\n    pass\n")
    elif kind == "huge":
        f.write_text("x = 1\n" * 400_000)
    elif kind == "latin1":
        f.write_bytes(b"s = '\xe9'\n" * 20)
    elif kind == "directory":
        f.mkdir()
    elif kind == "fifo":
        os.mkfifo(f)  # reading it would hang: it must not be opened
    r = run_cli("--json", stdin=paste(str(f), line=1), timeout=30)
    assert r.returncode == 0 and b"Traceback" not in r.stderr
    out = json.loads(r.stdout)
    assert out["culprit"] is None
    assert out["template"] == "T1"  # the paste is still explained


def test_a_pep263_file_is_read(tmp_path):
    f = tmp_path / "dino_loss.py"
    f.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + LOSS.encode())
    out = explain_json(stdin=paste(str(f), line=20))
    assert out["culprit"]["expr"] == "self._center.value"


def test_a_link_out_of_the_source_folder_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "dino_loss.py").write_text(LOSS)
    checkout = tmp_path / "checkout"
    (checkout / "pkg").mkdir(parents=True)
    (checkout / "pkg" / "dino_loss.py").symlink_to(outside / "dino_loss.py")
    out = explain_json("--source", str(checkout), stdin=paste("/remote/pkg/dino_loss.py"))
    assert out["culprit"] is None


def test_reading_never_executes_the_file(tmp_path):
    marker = tmp_path / "ran"
    f = tmp_path / "dino_loss.py"
    f.write_text(f"open({str(marker)!r}, 'w').close()\n" + LOSS)
    explain_json(stdin=paste(str(f), line=19))
    assert not marker.exists()


def test_a_thin_paste_with_a_checkout_lists_places_to_look_never_a_culprit(tmp_path):
    (tmp_path / "model.py").write_text(LOSS)
    r = run_cli("--source", str(tmp_path), stdin=(ERROR + "\n").encode())
    text = r.stdout.decode()
    assert r.returncode == 0 and "The culprit, from your code" not in text
    places = text.split("Where to look in your code (the paste names no line of it)\n")[1]
    assert places.startswith("  - model.py:18  t = teacher_out - self._center.value")
    out = explain_json("--source", str(tmp_path), stdin=(ERROR + "\n").encode())
    assert out["culprit"]["located_by"] == "scan"
    assert out["families"] == explain_json("--no-source", stdin=(ERROR + "\n").encode())["families"]


@pytest.mark.parametrize("kind", ["syntax", "binary", "fifo"])
def test_an_imported_file_that_cannot_be_read_is_a_note(tmp_path, kind):
    """The helper class lives in another file of the project; that file is broken: the answer
    says so in one line and the paste is still explained (nothing executed, nothing hangs)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    helper = tmp_path / "pkg" / "center.py"
    if kind == "syntax":
        helper.write_text("class Center(:\n")
    elif kind == "binary":
        helper.write_bytes(b"\x00\x01" * 50)
    else:
        os.mkfifo(helper)
    loss = tmp_path / "pkg" / "loss.py"
    loss.write_text(LOSS.replace("class Center(nn.Module):", "from .center import Center\n\n\nclass _Old(nn.Module):"))
    line = next(i for i, t in enumerate(loss.read_text().splitlines(), 1) if "t = teacher_out" in t)
    r = run_cli("--json", stdin=paste(str(loss), line=line), timeout=30)
    assert r.returncode == 0 and b"Traceback" not in r.stderr
    out = json.loads(r.stdout)
    assert out["template"] == "T1" and out["culprit"] is None
    if kind != "fifo":  # a FIFO is never a module file: it is not even opened
        assert any("center.py" in n for n in out["code"]["notes"])


def test_a_helper_class_in_another_file_names_the_culprit_there(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "center.py").write_text(LOSS.split("class DINOLoss")[0])
    loss = tmp_path / "pkg" / "loss.py"
    loss.write_text("import torch\nfrom torch import nn\nfrom .center import Center\n\n\nclass DINOLoss"
                    + LOSS.split("class DINOLoss")[1])
    line = next(i for i, t in enumerate(loss.read_text().splitlines(), 1) if "t = teacher_out" in t)
    out = explain_json(stdin=paste(str(loss), line=line))
    assert out["culprit"]["expr"] == "self._center.value"
    assert out["culprit"]["made_at"].endswith("center.py:9  self.value = torch.zeros(1, dim)")
