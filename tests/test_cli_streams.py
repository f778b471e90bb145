"""Every command with any stdout encoding, closed pipes and existing files (issue 29)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SD = [sys.executable, "-m", "samedevice"]
BUG = textwrap.dedent("""\
    import torch
    from torch import nn


    class M(nn.Module):
        def forward(self, x):
            return x + torch.arange(x.shape[-1])
    """)


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_cases_and_check_print_with_a_narrow_stdout_encoding(tmp_path, encoding):
    # `samedevice cases` prints "≤"; a folder named "é" is in check's output
    cases = subprocess.run([*SD, "cases"], capture_output=True, env=_env(PYTHONIOENCODING=encoding), timeout=120)
    assert cases.returncode == 0, cases.stderr.decode(errors="replace")[-800:]
    folder = tmp_path / "é"
    folder.mkdir()
    (folder / "m.py").write_text(BUG)
    check = subprocess.run([*SD, "check", str(folder)], capture_output=True,
                           env=_env(PYTHONIOENCODING=encoding), timeout=120)
    assert check.returncode == 1 and b"SD401" in check.stdout and b"Traceback" not in check.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
def test_check_keeps_exit_1_when_its_reader_is_gone(tmp_path):
    for i in range(300):  # more than a pipe buffer of findings
        (tmp_path / f"m{i:03}.py").write_text(BUG)
    r, w = os.pipe()
    os.close(r)  # the reader left before reading anything (`| head -0`)
    proc = subprocess.run([*SD, "check", str(tmp_path)], stdout=w, stderr=subprocess.PIPE, timeout=120)
    os.close(w)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_usage_error_is_exit_2_even_when_stdout_and_stderr_cannot_be_written():
    with open("/dev/full", "w") as full:  # every write fails (ENOSPC), as on a vanished terminal
        proc = subprocess.run([*SD, "snippet", "no-such-case", "--broken"], stdout=full, stderr=full,
                              timeout=120)
    assert proc.returncode == 2  # it was 1: printing the one-line error raised


def test_snippet_o_refuses_to_overwrite_or_write_through_a_link_without_force(tmp_path):
    slug = "lightly-dino-loss-center"  # the first seed case
    target = tmp_path / "keep.py"
    target.write_text("mine\n")
    proc = subprocess.run([*SD, "snippet", slug, "--broken", "-o", str(target)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().endswith("exists; --force replaces it")
    assert target.read_text() == "mine\n"
    link = tmp_path / "link.py"
    link.symlink_to(target)
    proc = subprocess.run([*SD, "snippet", slug, "--broken", "-o", str(link), "--force"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and target.read_text() == "mine\n" and not link.is_symlink()
    assert "import torch" in link.read_text()
