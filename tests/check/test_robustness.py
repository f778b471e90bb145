"""``samedevice check`` on what real trees hold (issue 28's robustness list, each reproduced):
FIFOs, links to themselves, BOMs and coding lines, notebooks, code nested too deep for the
rules, paths SARIF must encode, non-ASCII columns, bare ``# noqa:``, duplicate paths."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap

import pytest

from tests.check.test_cli import BUG

FACTORY = "SD401"
BUG_LINE = 7  # `return x + torch.arange(x.shape[-1])` in BUG


def _codes(stdout: str) -> list[str]:
    return re.findall(r": (SD\d{3}) ", stdout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_a_fifo_in_a_checked_folder_is_skipped_and_named_alone_is_a_one_line_error(tmp_path, run):
    import signal

    (tmp_path / "model.py").write_text(BUG)
    os.mkfifo(tmp_path / "pipe.py")  # read, it blocks until a writer comes: check hung

    def hung(*_):
        raise TimeoutError("check blocked on the FIFO")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        r = run(".", cwd=tmp_path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert r.returncode == 1 and _codes(r.stdout) == [FACTORY]
    r = run("pipe.py", cwd=tmp_path)
    assert (r.returncode, r.stderr.strip()) == (2, "samedevice check: pipe.py: not a regular file or folder")


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_a_link_to_itself_neither_crashes_config_discovery_nor_the_walk(tmp_path, run):
    (tmp_path / "model.py").write_text(BUG)
    (tmp_path / "loop.py").symlink_to("loop.py")
    r = run(".", cwd=tmp_path)
    assert r.returncode == 1 and _codes(r.stdout) == [FACTORY]
    r = run("loop.py", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a regular file" in r.stderr


def test_a_bom_and_a_pep_263_coding_line_are_read_as_python_reads_them(tmp_path, run):
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + BUG.encode())
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + BUG.encode())
    r = run("bom.py", "latin.py", cwd=tmp_path)
    assert r.stdout.splitlines()[0].startswith(f"bom.py:{BUG_LINE}:")
    assert r.stdout.splitlines()[1].startswith(f"latin.py:{BUG_LINE + 2}:")
    assert _codes(r.stdout) == [FACTORY, FACTORY]
    r = run("-", cwd=tmp_path, stdin="\ufeff" + BUG)
    assert _codes(r.stdout) == [FACTORY]


def test_a_notebook_is_checked_cell_by_cell(tmp_path, run):
    cells = [
        {"cell_type": "markdown", "source": ["# a model\n"]},
        {"cell_type": "code", "source": ["%matplotlib inline\n", "import torch\n", "from torch import nn\n"]},
        {"cell_type": "code", "source": textwrap.dedent("""\
            class M(nn.Module):
                def forward(self, x):
                    return x + torch.arange(x.shape[-1])
            """)},
        {"cell_type": "code", "source": ["%%bash\n", "nvidia-smi\n"]},
    ]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5}))
    r = run("nb.ipynb", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.splitlines()[0].startswith(f"nb.ipynb:cell 3:3:20: {FACTORY} ")
    data = json.loads(run("--format", "json", "nb.ipynb", cwd=tmp_path).stdout)
    assert [(d["cell"], d["line"], d["code"]) for d in data] == [(3, 3, FACTORY)]
    (tmp_path / "bad.ipynb").write_text("{not json")
    r = run("bad.ipynb", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.startswith("bad.ipynb:1:1: SD000 cannot read the notebook")


def test_code_too_deep_for_the_rules_is_one_sd999_line_exit_2_and_the_other_files_keep_their_findings(
        tmp_path, run):
    # ~1,000 terms: Python compiles it; the rules' recursion does not reach its bottom
    (tmp_path / "deep.py").write_text("import torch\nx = " + " + ".join(["torch.zeros(1)"] * 1000) + "\n")
    (tmp_path / "model.py").write_text(BUG)
    compile((tmp_path / "deep.py").read_text(), "deep.py", "exec")
    r = run("deep.py", "model.py", cwd=tmp_path)
    assert r.returncode == 2
    assert _codes(r.stdout) == ["SD999", FACTORY]
    assert r.stdout.splitlines()[0] == ("deep.py:1:1: SD999 not checked: the code is nested too deep for the "
                                        "checker (RecursionError)")


def test_many_files_in_parallel_keep_every_finding_beside_a_file_the_rules_fail_on(tmp_path, run):
    (tmp_path / "deep.py").write_text("import torch\nx = " + " + ".join(["torch.zeros(1)"] * 1000) + "\n")
    for i in range(45):
        (tmp_path / f"m{i:02}.py").write_text(BUG)
    r = run("--jobs", "2", ".", cwd=tmp_path)
    assert r.returncode == 2 and _codes(r.stdout).count(FACTORY) == 45 and "SD999" in r.stdout


def test_sarif_uris_are_percent_encoded_uri_references(tmp_path, run):
    name = "a dir#1/m 50%.py"
    (tmp_path / "a dir#1").mkdir()
    (tmp_path / name).write_text(BUG)
    doc = json.loads(run("--format", "sarif", name, cwd=tmp_path).stdout)
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "a%20dir%231/m%2050%25.py"
    doc = json.loads(run("--format", "sarif", "--stdin-filename", "<stdin>", "-", cwd=tmp_path, stdin=BUG).stdout)
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    # RFC 3986 URI reference: unreserved, reserved and %XX only
    assert uri == "%3Cstdin%3E" and re.fullmatch(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-F]{2})*", uri)


def test_columns_count_characters_not_utf8_bytes(tmp_path, run):
    (tmp_path / "m.py").write_text(BUG.replace("return x + torch", "return x + 0 * len('äöü') + torch"))
    r = run("m.py", cwd=tmp_path)
    line = BUG.splitlines()[BUG_LINE - 1].replace("return x + torch", "return x + 0 * len('äöü') + torch")
    assert r.stdout.startswith(f"m.py:{BUG_LINE}:{line.index('torch.arange') + 1}: {FACTORY}")


def test_a_bare_noqa_colon_silences_nothing_and_a_named_code_still_silences(tmp_path, run):
    (tmp_path / "a.py").write_text(BUG.replace("x.shape[-1])", "x.shape[-1])  # noqa:"))
    (tmp_path / "b.py").write_text(BUG.replace("x.shape[-1])", f"x.shape[-1])  # noqa: {FACTORY}"))
    (tmp_path / "c.py").write_text(BUG.replace("x.shape[-1])", "x.shape[-1])  # noqa"))
    r = run("a.py", "b.py", "c.py", cwd=tmp_path)
    assert [line.split(":")[0] for line in r.stdout.splitlines()] == ["a.py"]


def test_the_same_file_given_twice_is_reported_once(tmp_path, run):
    (tmp_path / "m.py").write_text(BUG)
    r = run("m.py", "./m.py", str(tmp_path / "m.py"), ".", cwd=tmp_path)
    assert _codes(r.stdout) == [FACTORY]


def test_select_and_ignore_that_cancel_out_are_a_usage_error(tmp_path, run):
    (tmp_path / "m.py").write_text(BUG)
    (tmp_path / "pyproject.toml").write_text(f'[tool.samedevice]\nignore = ["{FACTORY}"]\n')
    r = run("--select", FACTORY, "m.py", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("samedevice check: no rule is selected: the --select and ignore lists cancel out")
