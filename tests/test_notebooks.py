"""Case pages: each notebook matches its sources, and re-running it prints what it shows.

Each page is executed once in `make test`: `samedevice verify --pages DIR` runs it (its cells
are verify's broken and fixed runs) and the re-run test compares that run's outputs with the
stored ones (SAMEDEVICE_PAGES_RUN=DIR). Run alone, the test executes the page itself with
nbclient, like nbmake. Either way a cell outside `raises-exception` that fails stops the page,
so the hidden cells' assertion that the failing cell failed with the documented message, word
for word, is checked in the same run that reproduces the stored outputs.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import nbformat
import pytest

from samedevice.cases import load_cases
from samedevice.pages.execute import execute
from samedevice.pages.notebook import (
    HIDDEN_TAG,
    SECTIONS,
    check_notebook,
    comparable_outputs,
    normalise_outputs,
    same_output,
)
from samedevice.verify.page import load_page_run

CASES = load_cases()
RUNNABLE = [c for c in CASES if c.verify != "gpu-only"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_notebook_matches_its_sources(case):
    assert check_notebook(case) == [], "run `make notebooks` (samedevice notebook) to regenerate"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_page_has_the_fixed_headings_in_order(case):
    nb = nbformat.read(case.notebook_path, as_version=4)
    headings = [line[3:].strip() for cell in nb.cells if cell.cell_type == "markdown"
                for line in cell.source.splitlines() if line.startswith("## ")]
    assert headings == list(SECTIONS)


def _fresh_run(case, stored: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The page as `samedevice verify --pages DIR` ran it in this `make test` (DIR in
    SAMEDEVICE_PAGES_RUN), so the page is executed once; else a run of its own, in a kernel."""
    folder = os.environ.get("SAMEDEVICE_PAGES_RUN")
    if folder:
        kept = load_page_run(case, Path(folder))
        if kept is not None:
            return kept
    return execute(copy.deepcopy(stored), case.root)


@pytest.mark.slow
@pytest.mark.parametrize("case", RUNNABLE, ids=lambda c: c.slug)
def test_rerunning_the_notebook_reproduces_its_stored_outputs(case):
    stored = nbformat.read(case.notebook_path, as_version=4)
    fresh = _fresh_run(case, stored)
    visible = [i for i, c in enumerate(stored.cells)
               if c.cell_type == "code" and HIDDEN_TAG not in c.metadata.get("tags", ())]
    want = comparable_outputs(stored)
    got = comparable_outputs(fresh)
    code_index = [i for i, c in enumerate(stored.cells) if c.cell_type == "code"]
    for k, cell_index in enumerate(code_index):
        if cell_index in visible:
            same = len(got[k]) == len(want[k]) and all(map(same_output, got[k], want[k]))
            assert same, f"cell {cell_index} now prints something else:\n{got[k]}\nthe page shows:\n{want[k]}"


def _notebook_printing(*stderr: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("mp.spawn(run, nprocs=2)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=t) for t in stderr]
    return nbformat.v4.new_notebook(cells=[cell])


def test_spawns_racy_sigterm_log_line_is_not_compared():
    # Whether spawn still finds a sibling rank alive to SIGTERM is a race (CI saw both ways).
    sigterm = ("W1122 05:15:35.949000 9988 torch/multiprocessing/spawn.py:165] "
               "Terminating process 10008 via signal SIGTERM\n")
    assert comparable_outputs(_notebook_printing(sigterm)) == comparable_outputs(_notebook_printing())
    other = "W1122 05:15:35.949000 9988 torch/distributed/c10d.py:1] something else\n"
    assert comparable_outputs(_notebook_printing(sigterm + other)) == [
        ["W<time> <thread> torch/distributed/c10d.py:1] something else\n"]]


def test_ranks_racy_barrier_warning_is_not_compared():
    # A rank terminated by its sibling's failure may not reach barrier() and its warning.
    warning = (".../site-packages/torch/distributed/c10d_logger.py:83: UserWarning: barrier(): using the "
               "device under current context. You can specify `device_id` in `init_process_group` to "
               "mute this warning.\n  return func(*args, **kwargs)\n")
    assert comparable_outputs(_notebook_printing(warning)) == comparable_outputs(_notebook_printing())
    other = ".../site-packages/torch/distributed/c10d_logger.py:83: UserWarning: something else\n"
    assert comparable_outputs(_notebook_printing(warning + other)) == [[other]]


@pytest.mark.parametrize(("got", "want"), [
    ("tensor(828.8502)\n", "tensor(828.8501)\n"),  # seen between two CPUs on this very page
    ("0.33319539\n", "0.33319538831710815\n"),
    ("Loss 2.1986e+00\n", "Loss 2.1985e+00\n"),
    ("tensor([[-0.5989,  0.1180]])", "tensor([[-0.5989,   0.1181]])"),
])
def test_float_noise_between_cpus_is_the_same_output(got, want):
    assert same_output(got, want)


@pytest.mark.parametrize(("got", "want"), [
    ("tensor(828.5)\n", "tensor(828.8501)\n"),
    ("tensor(829.8501)\n", "tensor(828.8501)\n"),
    ("tensor(0.5000, device='cpu')", "tensor(0.5000, device='cuda:0')"),
    ("torch.Size([2, 4])", "torch.Size([2, 3])"),  # integers are compared exactly
    ("Loss 2.1985e+01\n", "Loss 2.1985e+00\n"),
    ("1.0 2.0", "1.0"),
    ("torch 2.14.0+cpu", "torch 2.13.0+cpu"),  # a version is text, not a number with noise
    ("loss 0.5000\nacc 0.2500", "loss 0.5000 acc 0.2500"),  # lines are lines
])
def test_different_numbers_or_text_are_not_the_same_output(got, want):
    assert not same_output(got, want)


def _notebook_failing_with(message: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("cmodel(x)")
    cell.outputs = [nbformat.v4.new_output(
        "error", ename="TorchRuntimeError", evalue=message,
        traceback=["Traceback", f"\x1b[31mTorchRuntimeError\x1b[39m: {message}"])]
    return nbformat.v4.new_notebook(cells=[cell])


def test_a_cells_file_named_after_the_kernels_pid_is_the_same_output(tmp_path):
    # torch.compile's "from user code:" names the cell's file, <tempdir>/ipykernel_<pid>/<hash>.py
    import tempfile

    def shown(pid: int, cell_hash: int = 1337) -> list[list[str]]:
        where = f"{tempfile.gettempdir()}/ipykernel_{pid}/{cell_hash}.py"
        message = f'Tensor device mismatch\n\nfrom user code:\n   File "{where}", line 10, in forward\n'
        nb = normalise_outputs(_notebook_failing_with(message), tmp_path)
        assert nb.cells[0].outputs[0].evalue == message.replace(where, f"/tmp/ipykernel_<pid>/{cell_hash}.py")
        return comparable_outputs(nb)

    assert shown(4242) == shown(977)
    assert shown(4242) != shown(4242, cell_hash=1338)  # another cell's code is another file
