"""``samedevice check`` speaks Ruff's command line (issue 28): ``--output-format``,
``--exit-zero``, ``--extend-select``, ``--statistics`` per rule, ``--explain``, ``--version``,
``per-file-ignores`` and ``exclude`` anchored to the ``pyproject.toml`` that holds them."""

from __future__ import annotations

import json

import pytest

from samedevice.cli import main
from tests.check.test_cli import BUG

FACTORY = "SD401"


def test_output_format_is_the_name_and_format_stays_an_alias(tmp_path, run):
    (tmp_path / "m.py").write_text(BUG)
    a = run("--output-format", "json", "m.py", cwd=tmp_path)
    b = run("--format", "json", "m.py", cwd=tmp_path)
    assert a.stdout == b.stdout and json.loads(a.stdout)[0]["code"] == FACTORY


def test_exit_zero_keeps_the_findings_and_exits_0(tmp_path, run):
    (tmp_path / "m.py").write_text(BUG)
    r = run("--exit-zero", "m.py", cwd=tmp_path)
    assert r.returncode == 0 and FACTORY in r.stdout


def test_extend_select_adds_to_the_selection(tmp_path, run):
    (tmp_path / "m.py").write_text(BUG)
    assert run("--select", "SD1", "m.py", cwd=tmp_path).returncode == 0
    r = run("--select", "SD1", "--extend-select", FACTORY, "m.py", cwd=tmp_path)
    assert r.returncode == 1 and FACTORY in r.stdout


def test_statistics_counts_findings_per_rule_instead_of_listing_them(tmp_path, run):
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(BUG)
    r = run("--statistics", ".", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [f"3\t{FACTORY}\tfactory-without-device"]
    assert "lines/s" in r.stderr


def test_explain_prints_the_rules_doc_and_an_unknown_code_is_one_line(tmp_path, run):
    r = run("--explain", FACTORY.lower(), cwd=tmp_path)
    assert r.returncode == 0
    assert r.stdout.startswith(f"{FACTORY} ") and "What it does:" in r.stdout and "Use instead:" in r.stdout
    r = run("--explain", "SD9999", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("samedevice check: --explain SD9999: no such rule")


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("samedevice ")


def test_per_file_ignores_and_exclude_are_relative_to_their_pyproject(tmp_path, run):
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "gen").mkdir()
    (project / "src" / "gen").mkdir(parents=True)
    for f in ("tests/test_m.py", "gen/out.py", "src/gen/out.py", "src/m.py"):
        (project / f).write_text(BUG)
    (project / "pyproject.toml").write_text(
        '[tool.samedevice]\nexclude = ["gen/*"]\n'
        f'per-file-ignores = {{"tests/*" = ["{FACTORY}"]}}\n')
    r = run("proj", cwd=tmp_path)  # run from above the project: patterns still mean proj/...
    assert sorted(line.split(":")[0] for line in r.stdout.splitlines()) == ["proj/src/gen/out.py", "proj/src/m.py"]


def test_each_path_is_checked_under_its_own_pyproject(tmp_path, run):
    # config came from the first path only: b's ignore was never read
    for pkg, table in (("a", ""), ("b", f'[tool.samedevice]\nignore = ["{FACTORY}"]\n')):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "pyproject.toml").write_text(table)
        (tmp_path / pkg / "m.py").write_text(BUG)
    r = run("a", "b", cwd=tmp_path)
    assert [line.split(":")[0] for line in r.stdout.splitlines()] == ["a/m.py"]
    r = run("b", "a", cwd=tmp_path)
    assert [line.split(":")[0] for line in r.stdout.splitlines()] == ["a/m.py"]
