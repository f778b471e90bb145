"""Proving a case by running its page once: the run both ``verify`` and the page test use.

A case page holds the broken program (the cell tagged ``raises-exception``), the hidden cell
that checks the documented error word for word, the fixed program, and the cells that find the
culprit. ``verify`` runs the page in a forked child of its warm interpreter
(``samedevice.pages.inprocess``) and reads from that one run what running ``broken.py`` and
``fixed.py`` separately would tell it: how the broken cell ended, whether each program put
tensors on the simulated device, and what the fixed program left behind (compared with a
plain-CPU run of ``fixed.py``, which stays a program run). The executed page is kept, so the
page test compares it with the stored outputs instead of executing the page a second time.

Child side: ``run_in_child`` (called by ``samedevice.sim._warm_worker``). Parent side:
``PageRun``, read back by ``samedevice.sim.warm.WarmRunner.run_page``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# IPython's own names in a shell's namespace, and the snapshot the page takes of the broken run
_NOT_PROGRAM_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "broken"})


def program_cells(nb: Any, slug: str) -> tuple[int | None, int | None]:
    """Indices of the broken program's cell (tagged ``raises-exception``, the first) and the
    fixed program's cell (its source, or ``%run`` of it) in a case page."""
    broken = fixed = None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", ())
        if broken is None and "raises-exception" in tags:
            broken = i
        elif broken is not None and fixed is None and "remove-cell" not in tags:
            fixed = i
    return broken, fixed


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class PageRun:
    """What one run of a case page showed (read back from the child's files)."""

    notebook: Any  # the executed page (nbformat), outputs with machine paths as produced
    broken_exception: dict[str, Any] | None
    broken_usage: int
    fixed_finished: bool
    fixed_usage: int
    failure: str | None  # a cell raised that should not have (the hidden check, the fix, ...)
    timed_out: bool = False
    seconds: float = 0.0
    values_blob: bytes | None = field(default=None, repr=False)

    def fixed_values(self) -> dict[str, Any]:
        import torch

        if self.values_blob is None:
            return {}
        return torch.load(io.BytesIO(self.values_blob), weights_only=False)


def read_page_run(folder: Path, seconds: float, timed_out: bool) -> PageRun:
    import nbformat

    try:
        facts = json.loads((folder / "facts.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        facts = {"failure": "the page's process died before it finished"}
    try:
        nb = nbformat.read(folder / "executed.ipynb", as_version=4)
    except (OSError, ValueError):
        nb = None
    values = folder / "values.pt"
    return PageRun(
        notebook=nb,
        broken_exception=facts.get("broken_exception"),
        broken_usage=int(facts.get("broken_usage", 0)),
        fixed_finished=bool(facts.get("fixed_finished", False)),
        fixed_usage=int(facts.get("fixed_usage", 0)),
        failure=facts.get("failure") or (f"timed out after {seconds:.0f} s" if timed_out else None),
        timed_out=timed_out,
        seconds=seconds,
        values_blob=values.read_bytes() if values.exists() else None,
    )


def _usage(usage_dir: str | None) -> int:
    """Simulated tensors created so far: this process's, and those of processes it started
    that have exited (spawned ranks write their counts to the usage folder)."""
    plumbing = sys.modules.get("samedevice.sim._plumbing")
    own = plumbing.USAGE.created if plumbing else 0
    started = 0
    if usage_dir and os.path.isdir(usage_dir):
        for name in os.listdir(usage_dir):
            try:
                with open(os.path.join(usage_dir, name)) as f:
                    started += int(f.read() or 0)
            except (OSError, ValueError):
                pass
    return own + started


def _exception(error: BaseException | None, outputs: list) -> dict[str, Any] | None:
    """How the broken cell ended. ``%run`` shows a program's error itself (the cell does not
    raise), so the shell's last error stands in when the cell printed one."""
    if error is None and any(o.output_type == "error" for o in outputs):
        error = getattr(sys, "last_value", None)
    if error is None:
        return None
    return {"type": type(error).__name__, "module": type(error).__module__, "message": str(error)}


def run_in_child(req: dict[str, Any]) -> int:
    """Run the page ``req["page"]`` in this (forked) process; leave facts, values and the
    executed page in ``req["folder"]``. Returns the exit status."""
    import nbformat
    import torch

    from samedevice.pages.inprocess import CellRun, PageFailed, execute_here
    from samedevice.sim._process import _capture

    folder = Path(req["folder"])
    nb = nbformat.read(req["page"], as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    broken_index, fixed_index = req["broken_cell"], req["fixed_cell"]
    usage_dir = os.environ.get("SAMEDEVICE_USAGE_DIR")
    facts: dict[str, Any] = {"broken_exception": None, "broken_usage": 0, "fixed_finished": False,
                             "fixed_usage": 0, "failure": None}

    def after_cell(run: CellRun, shell: Any) -> None:
        if run.index == broken_index:
            facts["broken_exception"] = _exception(run.error, run.cell.outputs)
            facts["broken_usage"] = _usage(usage_dir)
        elif run.index == fixed_index:
            facts["fixed_usage"] = _usage(usage_dir) - facts["broken_usage"]
            if run.error is None and not any(o.output_type == "error" for o in run.cell.outputs):
                facts["fixed_finished"] = True
                values = {}
                with torch._C.DisableTorchFunction():  # the alias must not rename devices here
                    for name, value in list(shell.user_ns.items()):
                        if name.startswith("_") or name in _NOT_PROGRAM_NAMES:
                            continue
                        captured = _capture(value, 0)
                        if captured is not None:
                            values[name] = captured
                torch.save(values, folder / "values.pt")

    code = 0
    try:
        execute_here(nb, str(folder), after_cell)
    except PageFailed as e:
        facts["failure"] = str(e)
        code = 1
    finally:
        nbformat.write(nb, folder / "executed.ipynb")
        (folder / "facts.json").write_text(json.dumps(facts), encoding="utf-8")
    return code


def save_page_run(case: Any, executed: Any, folder: Path) -> Path:
    """Keep an executed page for the page test, marked with the stored page it ran."""
    import nbformat

    from samedevice.pages.notebook import normalise_outputs

    folder.mkdir(parents=True, exist_ok=True)
    nb = normalise_outputs(executed, case.root)
    nb.metadata["samedevice_run"] = {"source_sha256": source_digest(case.notebook_path)}
    path = folder / f"{case.slug}.ipynb"
    nbformat.write(nb, path)
    return path


def load_page_run(case: Any, folder: Path) -> Any | None:
    """The executed page ``save_page_run`` kept for ``case``, if it ran the page stored now."""
    import nbformat

    path = folder / f"{case.slug}.ipynb"
    if not path.exists():
        return None
    nb = nbformat.read(path, as_version=4)
    ran = nb.metadata.get("samedevice_run", {}).get("source_sha256")
    return nb if ran == source_digest(case.notebook_path) else None
