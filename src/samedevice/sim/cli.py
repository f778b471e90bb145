"""``samedevice run SCRIPT [ARGS ...]``: run a program as ``python SCRIPT ARGS`` would, on a
simulated CUDA machine (``--gpus N`` GPUs, default 1), or as the plain-CPU reference run
(``--cpu``).

The program runs in a fresh interpreter with the terminal's input and output; processes it
starts (``torch.multiprocessing.spawn``) see the same machine. Its exit status is returned --
except that a program which ended well without ever putting a tensor on the simulated GPU is
no all-clear: it is reported, with exit status :data:`NEVER_USED_GPU` (``--allow-cpu`` accepts it).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from samedevice.cli import UserError

from . import _child
from .runner import STARTUP_DIR


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # The program runs in a child process; this one never imports torch (it doubled a short
    # program's start-up), so ask whether it is installed, for the command's one-line answer.
    if importlib.util.find_spec("torch") is None:
        raise ModuleNotFoundError("No module named 'torch'", name="torch")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--cpu", action="store_const", const="cpu", dest="mode",
                     help='the plain-CPU reference run: "cuda" is read as "cpu"')
    how.add_argument("--sim-name", action="store_const", const="sim", dest="mode",
                     help="keep the simulator's own name in messages (sim:0, wrapper_PrivateUse1_...)")
    parser.set_defaults(mode="cuda")
    parser.add_argument("--gpus", type=_gpu_count, default=1, metavar="N",
                        help="how many simulated GPUs the machine has (default 1)")
    parser.add_argument("--allow-cpu", action="store_true",
                        help="accept a program that never puts a tensor on the GPU (exit status 0)")
    parser.add_argument("--no-diagnosis", action="store_true",
                        help="print CUDA's traceback only, without samedevice's diagnosis after it")
    parser.add_argument("--diagnosis-json", metavar="FILE", type=Path,
                        help="also write the diagnosis of a device error as JSON into FILE (for tools; "
                             "not written when the program raises none)")
    parser.add_argument("script", help="the Python program to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")


NEVER_USED_GPU = 4  # exit status: the program ran, but entirely on the CPU


def _gpu_count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--gpus wants a whole number, not {text!r}") from None
    if not 1 <= n <= 16:
        raise argparse.ArgumentTypeError(f"--gpus wants 1 to 16 GPUs, not {n}")
    return n


def _usage(path: Path) -> int:
    """The count a process wrote (1 at first use, the total at exit); unreadable or junk: the
    file exists, so the process used the GPU."""
    try:
        return int(path.read_text().strip() or 1)
    except (OSError, ValueError):
        return 1


def run(args: argparse.Namespace) -> int:
    script = Path(args.script)
    if not script.is_file():
        raise UserError(f"no such file: {script}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STARTUP_DIR), env.get("PYTHONPATH")]))
    env["SAMEDEVICE_SIM"] = args.mode
    env["SAMEDEVICE_GPUS"] = str(args.gpus)
    env.pop("SAMEDEVICE_RESULT", None)
    env["SAMEDEVICE_DIAGNOSE"] = "0" if args.no_diagnosis else "1"
    env.pop("SAMEDEVICE_DIAGNOSIS_JSON", None)
    if args.diagnosis_json is not None:
        target = args.diagnosis_json.resolve()
        if not target.parent.is_dir():
            raise UserError(f"--diagnosis-json: no such folder: {target.parent}")
        target.unlink(missing_ok=True)  # a stale file must not pass for this run's diagnosis
        env["SAMEDEVICE_DIAGNOSIS_JSON"] = str(target)
    # A worker the program left running (spawn's join SIGTERMs the others and returns) can write
    # its usage file while the folder is being removed: that must not end the run in a traceback.
    with tempfile.TemporaryDirectory(prefix="samedevice-usage-", ignore_cleanup_errors=True) as usage_dir:
        env["SAMEDEVICE_USAGE_DIR"] = usage_dir
        status = _child.run([sys.executable, str(script), *args.args], env)
        used = sum(_usage(p) for p in Path(usage_dir).glob("usage-*"))
    if status == 0 and args.mode != "cpu" and used == 0 and not args.allow_cpu:
        print(f"samedevice: {script} never put a tensor on the simulated GPU: it ran entirely on the CPU, "
              "so it proves nothing about device placement (--allow-cpu accepts this)", file=sys.stderr)
        return NEVER_USED_GPU
    return status
