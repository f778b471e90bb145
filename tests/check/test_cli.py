"""``samedevice check`` as users run it: formats, selection, configuration, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from samedevice.check.links import docs_url

BUG = textwrap.dedent("""\
    import torch
    from torch import nn


    class M(nn.Module):
        def forward(self, x):
            return x + torch.arange(x.shape[-1])
    """)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(BUG)
    (tmp_path / "pkg" / "ok.py").write_text("import torch\nx = torch.zeros(3)\n")
    return tmp_path


def test_text_output_and_exit_1(project, run):
    r = run("pkg", cwd=project)
    assert r.returncode == 1, r.stderr
    assert r.stdout == (
        "pkg/model.py:7:20: SD401 a tensor factory without `device=` meets a tensor that follows "
        "the input: `torch.arange(...)` (https://example.test/guide/families/f4/)\n")


def test_clean_exit_0(project, run):
    r = run("pkg/ok.py", cwd=project)
    assert (r.returncode, r.stdout) == (0, "")


def test_stdin(project, run):
    r = run("-", "--stdin-filename", "mine.py", cwd=project, stdin=BUG)
    assert r.returncode == 1
    assert r.stdout.startswith("mine.py:7:20: SD401 ")


def test_json_and_sarif(project, run):
    data = json.loads(run("pkg", "--format", "json", cwd=project).stdout)
    assert [(d["path"], d["line"], d["column"], d["code"], d["family"]) for d in data] == [
        ("pkg/model.py", 7, 20, "SD401", "F4")]
    assert data[0]["url"] == "https://example.test/guide/rules/#sd401"
    sarif = json.loads(run("pkg", "--format", "sarif", cwd=project).stdout)
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "SD401"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 7, "startColumn": 20}


def test_github_annotations(project, run):
    r = run("pkg", "--format", "github", cwd=project)
    assert r.stdout.startswith("::warning file=pkg/model.py,line=7,col=20,title=SD401::a tensor factory")


def test_select_and_ignore(project, run):
    assert run("pkg", "--select", "SD2", cwd=project).returncode == 0
    assert run("pkg", "--ignore", "SD401", cwd=project).returncode == 0
    assert run("pkg", "--select", "SD4", cwd=project).returncode == 1


def test_pyproject_table(project, run):
    (project / "pyproject.toml").write_text('[tool.samedevice]\nignore = ["SD4"]\n')
    assert run("pkg", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.samedevice]\nexclude = ["model.py"]\n')
    assert run("pkg", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.samedevice]\nselect = ["SD401"]\n')
    assert run("pkg", cwd=project).returncode == 1


@pytest.mark.parametrize("args, message", [
    (("nope",), "samedevice check: nope: no such file or directory\n"),
    (("--select", "XY1", "pkg"), "samedevice check: --select: 'XY1' is not a rule code (SD201), "
                                  "a prefix (SD2) or ALL\n"),
    (("-", "pkg"), "samedevice check: - (stdin) cannot be combined with other paths\n"),
])
def test_bad_usage_exit_2_one_line(project, args, message, run):
    r = run(*args, cwd=project)
    assert (r.returncode, r.stderr, r.stdout) == (2, message, "")


def test_bad_pyproject_exit_2(project, run):
    (project / "pyproject.toml").write_text('[tool.samedevice]\nselct = ["SD4"]\n')
    r = run("pkg", cwd=project)
    assert r.returncode == 2
    assert r.stderr.strip().endswith("unknown key(s) in [tool.samedevice]: selct")
    assert "Traceback" not in r.stderr


def test_unparsable_file_is_reported(project, run):
    (project / "pkg" / "broken.py").write_text("def f(:\n")
    r = run("pkg/broken.py", cwd=project)
    assert r.returncode == 1
    assert r.stdout.startswith("pkg/broken.py:1:7: SD000 cannot parse:")


def test_one_link_base(monkeypatch):
    monkeypatch.setenv("SAMEDEVICE_DOCS_URL", "http://127.0.0.1:8000")
    assert docs_url("families/f2/") == "http://127.0.0.1:8000/families/f2/"


def test_many_files_in_parallel_give_the_same_findings(project, run):
    for i in range(45):
        (project / "pkg" / f"m{i}.py").write_text(BUG if i % 9 == 0 else "import torch\n")
    serial = run("pkg", "--jobs", "1", cwd=project)
    parallel = run("pkg", "--jobs", "2", cwd=project)
    assert serial.stdout == parallel.stdout
    assert serial.stdout.count("SD401") == 6


def test_command_line_entry_point(project):
    """Once through a real process: the console entry point, its exit status and its output."""
    r = subprocess.run([sys.executable, "-m", "samedevice", "check", "pkg"], cwd=project,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert r.stdout.startswith("pkg/model.py:7:20: SD401 ")


def test_family_prefixes_do_not_overlap():
    from samedevice.check.registry import expand_selector

    assert expand_selector("SD1") == {"SD101"}
    assert expand_selector("SD10") == {"SD1001"}
    assert expand_selector("sd9") == {"SD901", "SD902"}


def test_never_imports_torch(project):
    code = ("import sys\nfrom samedevice.cli import main\n"
            "rc = main(['check', 'pkg'])\n"
            "assert 'torch' not in sys.modules, 'samedevice check imported torch'\n"
            "raise SystemExit(rc)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1, r.stderr
