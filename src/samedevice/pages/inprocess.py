"""Executing a case page inside this process with IPython, the way its Jupyter kernel would.

``samedevice verify`` proves a case by running its page: the page's failing cell *is* the
broken program's run on the simulated accelerator, its fix cell the fixed program's run, and
its hidden cells check the documented error word for word. The page runs in a fork of the warm
interpreter (torch already imported; see ``samedevice.sim._warm_worker``) instead of a fresh
kernel, so a case costs what its cells cost, and ``make test`` executes each page once: the
notebook test compares the outputs this run produced with the ones the page shows.

The shell is IPython's own ``InteractiveShell`` (ipykernel's kernel shell is a subclass of it),
with what the kernel adds for a notebook: results and displays become ``execute_result`` and
``display_data`` outputs, and errors become ``error`` outputs with IPython's formatted
traceback. Streams are read from file descriptors 1 and 2, so the output of processes a cell
starts (spawned ranks) is captured as ipykernel captures it.

Like nbclient with ``allow_errors=False``, execution stops at the first cell that raises
without the ``raises-exception`` tag.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ipykernel.compiler import XCachingCompiler
from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from nbformat import NotebookNode
from nbformat.v4 import output_from_msg
from traitlets import Type
from traitlets.config import Config

RAISES_TAG = "raises-exception"


def _output(output_type: str, **content: Any) -> NotebookNode:
    return output_from_msg({"header": {"msg_type": output_type}, "content": content})


class _ResultHook(DisplayHook):
    """A cell's value becomes an ``execute_result`` output (ipykernel's ZMQShellDisplayHook)."""

    def write_output_prompt(self) -> None:
        pass

    def write_format_data(self, format_dict: dict, md_dict: dict | None = None) -> None:
        self.shell.page_outputs.append(_output(  # type: ignore[union-attr]
            "execute_result", data=format_dict, metadata=md_dict or {},
            execution_count=self.prompt_count))


class _DisplayRecorder(DisplayPublisher):
    """``display(...)`` becomes a ``display_data`` output."""

    def publish(self, data: dict, metadata: dict | None = None, source: Any = None, *,
                transient: Any = None, update: bool = False, **kwargs: Any) -> None:
        self.shell.page_outputs.append(  # type: ignore[union-attr]
            _output("display_data", data=data, metadata=metadata or {}))


class PageShell(InteractiveShell):
    # the kernel's compiler: its cell file names make tracebacks show the same context lines
    compiler_class = Type(XCachingCompiler)
    displayhook_class = Type(_ResultHook)
    display_pub_class = Type(_DisplayRecorder)

    def __init__(self, **kwargs: Any) -> None:
        self.page_outputs: list[NotebookNode] = []
        super().__init__(**kwargs)

    def _showtraceback(self, etype: type, evalue: BaseException, stb: list[str]) -> None:
        # ipykernel's ZMQInteractiveShell._showtraceback, as an output instead of a message
        sys.stdout.flush()
        sys.stderr.flush()
        self.page_outputs.append(_output("error", ename=etype.__name__, evalue=str(evalue),
                                         traceback=stb))


@dataclass
class CellRun:
    index: int  # the cell's index in the notebook
    cell: NotebookNode
    error: BaseException | None  # what the cell raised (None: it finished)


class _Streams:
    """File descriptors 1 and 2 as files; each cell's new text becomes its stream outputs."""

    def __init__(self, folder: str) -> None:
        self.paths = {name: os.path.join(folder, f"{name}.txt") for name in ("stdout", "stderr")}
        self.offsets = dict.fromkeys(self.paths, 0)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            opened = os.open(self.paths[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdout = sys.__stdout__ = _text_stream(1)
        sys.stderr = sys.__stderr__ = _text_stream(2)

    def take(self) -> list[NotebookNode]:
        sys.stdout.flush()
        sys.stderr.flush()
        outputs = []
        for name, path in self.paths.items():
            with open(path, "rb") as f:
                f.seek(self.offsets[name])
                data = f.read()
            self.offsets[name] += len(data)
            if data:
                text = data.decode("utf-8", errors="replace")
                outputs.append(_output("stream", name=name, text=text))
        return outputs


def _text_stream(fd: int) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8",
                            errors="backslashreplace", line_buffering=True, write_through=True)


class PageFailed(Exception):
    """A cell without the ``raises-exception`` tag raised (nbclient's CellExecutionError)."""


def execute_here(nb: NotebookNode, stream_folder: str,
                 after_cell: Callable[[CellRun, InteractiveShell], None] | None = None
                 ) -> NotebookNode:
    """Execute ``nb``'s code cells in this process, filling in their outputs; ``after_cell``
    sees each cell and the shell (its namespace) once the cell has run.

    Takes over file descriptors 1 and 2 (the caller is a forked child that owns them). Raises
    ``PageFailed`` naming the cell when one raises unexpectedly; the outputs so far are kept.
    """
    config = Config()
    config.HistoryManager.enabled = False  # no ~/.ipython database: the page leaves nothing behind
    shell = PageShell.instance(config=config)
    streams = _Streams(stream_folder)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        shell.page_outputs = []
        result = shell.run_cell(cell.source, store_history=True)
        cell.execution_count = shell.execution_count - 1
        errors = [o for o in shell.page_outputs if o.output_type == "error"]
        cell.outputs = [*streams.take(), *shell.page_outputs]
        raised = result.error_in_exec or result.error_before_exec
        if after_cell is not None:
            after_cell(CellRun(index, cell, raised), shell)
        if raised is not None and RAISES_TAG not in cell.metadata.get("tags", ()):
            what = f"{errors[0].ename}: {errors[0].evalue}" if errors else repr(raised)
            raise PageFailed(f"cell {index} raised {what}")
    return nb
