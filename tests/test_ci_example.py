"""examples/ci-project, the worked example of "Catch device bugs in your CI", run both ways.

Its tests run as its own CI runs them on a CPU-only runner (``pytest --sim-device=cuda``, the
samedevice plugin): as committed (the fix in) they pass; with ``bug.patch`` applied (the
running statistics as plain attributes, which ``.to()`` does not move) the accelerator test
fails with CUDA's exact text. Each run is a fresh pytest process in a copy of the example.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from samedevice.cases import repo_root

pytestmark = pytest.mark.slow  # two fresh pytest processes that import torch: ~10 s

CUDA_TEXT = ("RuntimeError: Expected all tensors to be on the same device, but found at least two "
             "devices, cuda:0 and cpu!")


@pytest.fixture
def project(tmp_path):
    dest = tmp_path / "ci-project"
    shutil.copytree(repo_root() / "examples" / "ci-project", dest,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


def _pytest(project, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=project, capture_output=True, text=True, timeout=300)


def test_the_fixed_project_passes_on_a_cpu_only_runner(project):
    out = _pytest(project, "--sim-device=cuda")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 passed" in out.stdout


def test_the_bug_fails_its_ci_with_cudas_text(project):
    patched = subprocess.run(["git", "apply", "bug.patch"], cwd=project, capture_output=True, text=True)
    assert patched.returncode == 0, patched.stderr
    out = _pytest(project, "--sim-device=cuda")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FAILED tests/test_runningnorm.py::test_runs_on_the_accelerator" in out.stdout
    assert f"E               {CUDA_TEXT}" in out.stdout
    assert "1 failed, 1 passed" in out.stdout
