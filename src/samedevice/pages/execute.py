"""Executing a case notebook with nbclient, in a kernel like the one nbmake uses."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat import NotebookNode

from samedevice.cases import Case

from .notebook import build_notebook, executed_info, normalise_outputs

CELL_TIMEOUT = 300


def kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")  # same reduction order on every machine
    env["PYTHONHASHSEED"] = "0"
    # links printed by audit/locate point at the site; from a case page the site is two up
    env["SAMEDEVICE_DOCS_URL"] = "../../"
    return env


def execute(nb: NotebookNode, root: Path) -> NotebookNode:
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(root / "cases")}},  # nbmake's working directory
        allow_errors=False,  # only cells tagged raises-exception may fail
    )
    client.execute(env=kernel_env())
    return normalise_outputs(nb, root)


def device_kind(case: Case) -> str:
    import torch

    if case.verify == "cpu":
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "sim"


def generate(case: Case) -> Path:
    """Build, execute and write ``cases/<slug>.ipynb``."""
    nb = build_notebook(case, executed_info(device_kind(case)))
    nb = execute(nb, case.root)
    nbformat.write(nb, case.notebook_path)
    return case.notebook_path
