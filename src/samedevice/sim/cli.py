"""``samedevice run SCRIPT [ARGS ...]``: run a program as ``python SCRIPT ARGS`` would, on the
simulated accelerator answering to "cuda" (or as the plain-CPU reference run, with ``--cpu``).

The program runs in a fresh interpreter with the terminal's input and output; processes it
starts (``torch.multiprocessing.spawn``) see the same device. Its exit status is returned.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from samedevice.cli import UserError

from .runner import STARTUP_DIR


def add_arguments(parser: argparse.ArgumentParser) -> None:
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--cpu", action="store_const", const="cpu", dest="mode",
                     help='the plain-CPU reference run: "cuda" is read as "cpu"')
    how.add_argument("--sim-name", action="store_const", const="sim", dest="mode",
                     help="keep the simulator's own name in messages (sim:0, wrapper_PrivateUse1_...)")
    parser.set_defaults(mode="cuda")
    parser.add_argument("script", help="the Python program to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")


def run(args: argparse.Namespace) -> int:
    script = Path(args.script)
    if not script.is_file():
        raise UserError(f"no such file: {script}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STARTUP_DIR), env.get("PYTHONPATH")]))
    env["SAMEDEVICE_SIM"] = args.mode
    env.pop("SAMEDEVICE_RESULT", None)
    return subprocess.call([sys.executable, str(script), *args.args], env=env)
