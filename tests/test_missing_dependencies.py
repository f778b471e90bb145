"""`pip install samedevice` alone (no PyTorch, no notebook tools) runs explain, cases, snippet
and check; every other command says in one line what to install, never a traceback.

Each test runs in a fresh interpreter where the optional dependencies cannot be imported
(``sys.modules[name] = None`` makes ``import name`` raise ``ModuleNotFoundError``, as an
environment without them does).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

TORCH_LINE = 'needs PyTorch, which is not installed in this environment'
TORCH_FIX = 'pip install "torch>=2.13,<2.16" numpy'
PAGES_LINE = "needs nbformat, which is not installed in this environment"


def _without(modules: tuple[str, ...], code: str, tmp_path) -> subprocess.CompletedProcess:
    block = "; ".join([f"sys.modules[{m!r}] = None" for m in modules] or ["pass"])
    return subprocess.run([sys.executable, "-c", f"import sys; {block}; {code}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def _cli(args: list[str], tmp_path, modules=("torch", "numpy", "nbformat", "nbclient")):
    return _without(modules, f"from samedevice.cli import main; sys.exit(main({args!r}))", tmp_path)


@pytest.mark.parametrize("args", [["run", "--help"], ["run", "train.py"], ["verify"],
                                  ["verify", "lightly-dino-loss-center"]])
def test_a_command_that_needs_torch_says_what_to_install(args, tmp_path):
    proc = _cli(args, tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"samedevice {args[0]}: {TORCH_LINE}") and line.endswith(TORCH_FIX)


@pytest.mark.parametrize("args", [["notebook", "--help"], ["notebook", "--check"]])
def test_the_page_commands_without_nbformat_say_what_to_install(args, tmp_path):
    proc = _cli(args, tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"samedevice notebook: {PAGES_LINE}")
    assert line.endswith("pip install nbformat nbclient ipykernel")


@pytest.mark.parametrize("args", [["cases"], ["snippet", "lightly-dino-loss-center", "--broken"],
                                  ["check", "--list-rules"]])
def test_the_commands_that_need_no_torch_still_run(args, tmp_path):
    proc = _cli(args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def test_explain_needs_no_torch(tmp_path):
    paste = tmp_path / "paste.txt"
    paste.write_text("RuntimeError: Expected all tensors to be on the same device, but found at "
                     "least two devices, cuda:0 and cpu!\n")
    proc = _cli(["explain", "--no-source", str(paste)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "T1" in proc.stdout


def test_a_module_missing_for_another_reason_keeps_its_traceback(tmp_path):
    # only the optional dependencies get the one-line answer; anything else missing is a bug
    from samedevice.cli import missing_dependency

    assert missing_dependency(ModuleNotFoundError("x", name="torch.nn")) is not None
    assert missing_dependency(ModuleNotFoundError("x", name="samedevice.nowhere")) is None


def test_the_pytest_plugin_without_torch_says_what_to_install(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    run = "import pytest; sys.exit(pytest.main([{!r}, 'test_x.py', '-p', 'no:cacheprovider']))"
    plain = _without(("torch",), run.format("-q"), tmp_path)
    assert plain.returncode == 0, plain.stdout + plain.stderr  # the plugin stays out of the way
    proc = _without(("torch",), run.format("--sim-device=cuda"), tmp_path)
    assert proc.returncode == 4  # pytest's usage error
    assert "Traceback" not in proc.stdout + proc.stderr
    assert f"ERROR: --sim-device=cuda {TORCH_LINE}" in proc.stderr


def test_dir_shows_the_lazy_tools_without_importing_torch(tmp_path):
    proc = _without((), "import samedevice; print(sorted(dir(samedevice))); "
                        "print('torch' in sys.modules)", tmp_path)
    names, torch_loaded = proc.stdout.splitlines()
    assert {"audit", "locate", "assert_on_device", "sim"} <= set(eval(names))
    assert torch_loaded == "False"


@pytest.mark.parametrize(("sim_env", "expected"), [
    ("cuda", 'samedevice: "cuda" is the simulated accelerator in this notebook (1 GPU, on the CPU; '
             "its device errors are CUDA's, word for word)\ncuda:0"),
    ("plain", "samedevice: SAMEDEVICE_SIM=plain, PyTorch is left as it is\ncpu"),
])
def test_load_ext_says_in_one_line_what_cuda_means_in_the_notebook(tmp_path, sim_env, expected):
    pytest.importorskip("IPython")
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a machine with CUDA keeps the real GPU")
    program = ("%load_ext samedevice\n"
               "import torch\n"
               "print(torch.zeros(1, device='cuda' if torch.cuda.is_available() else 'cpu').device)")
    env = {**os.environ, "SAMEDEVICE_SIM": sim_env}
    env.pop("SAMEDEVICE_GPUS", None)
    proc = subprocess.run([sys.executable, "-m", "IPython", "--no-banner", "--quick", "-c", program],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == expected
