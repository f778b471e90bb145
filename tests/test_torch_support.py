"""The supported torch range: stated once in code, equal in pyproject.toml, checked by run."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from samedevice import torch_support

ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_declares_the_range_the_commands_check():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert torch_support.REQUIREMENT in extras["torch"]
    assert torch_support.REQUIREMENT == "torch>=2.13,<2.16"


@pytest.mark.parametrize("version, supported", [
    ("2.13.0+cpu", True), ("2.14.1+cu130", True), ("2.15.0", True), ("2.12.1", False), ("2.16.0.dev20261201", False)])
def test_an_installed_torch_is_judged_by_its_release(monkeypatch, version, supported):
    monkeypatch.delenv("SAMEDEVICE_ANY_TORCH", raising=False)
    monkeypatch.setattr(torch_support.metadata, "version", lambda name: version)
    line = torch_support.problem()
    assert (line is None) == supported
    if not supported:
        assert line.startswith(f"torch {version} is not supported: the simulated GPU needs torch 2.13 to 2.15")
        assert "\n" not in line


def test_run_refuses_an_unsupported_torch_in_one_line(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("print('ran')\n")
    code = ("import sys; from importlib import metadata; metadata.version = lambda name: '2.12.0'; "
            "from samedevice.cli import main; sys.exit(main(['run', sys.argv[1]]))")
    proc = subprocess.run([sys.executable, "-c", code, str(prog)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        'samedevice run: torch 2.12.0 is not supported: the simulated GPU needs torch 2.13 to 2.15 '
        '(pip install "torch>=2.13,<2.16" numpy; SAMEDEVICE_ANY_TORCH=1 tries this one anyway)']
