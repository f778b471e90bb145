"""`samedevice verify` proves what it claims: swapping a case's programs must make it fail.

(`make test` runs `samedevice verify` over every case itself; these tests check that the
verdict depends on the programs, and that the command line behaves.)
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from samedevice.cases import load_cases
from samedevice.verify import FAIL, check_error, compare_values, verify_cases

CASES = [c for c in load_cases() if c.verify != "gpu-only"]


@pytest.mark.slow
def test_swapping_broken_and_fixed_makes_verify_fail_for_every_case():
    # one batched run over every case, on two warm interpreters (a fork per program)
    results = verify_cases(CASES, jobs=2, swapped=True)
    assert [r.case.slug for r in results] == [c.slug for c in CASES]
    wrong = {}
    for r in results:
        expected = [r.status == FAIL,
                    any(p.startswith("broken: broken.py finished without an error") for p in r.problems),
                    any(p.startswith("fixed: fixed.py did not finish") for p in r.problems)]
        if not all(expected):
            wrong[r.case.slug] = (r.status, r.problems)
    assert wrong == {}, "swapped programs that still verify (or fail for another reason)"


def _swapped_checkout(tmp_path):
    """A copy of this checkout's cases and snippets with every case's two programs exchanged
    on disk, as a user editing the files would leave them (the pages untouched)."""
    import shutil

    root = load_cases()[0].root
    shutil.copytree(root / "cases", tmp_path / "cases")
    shutil.copytree(root / "snippets", tmp_path / "snippets")
    for folder in (tmp_path / "snippets").iterdir():
        broken, fixed = folder / "broken.py", folder / "fixed.py"
        if broken.exists() and fixed.exists():
            code = broken.read_bytes()
            broken.write_bytes(fixed.read_bytes())
            fixed.write_bytes(code)
    return tmp_path


def test_every_page_records_the_programs_it_was_made_from():
    assert {c.slug: c.stale_programs() for c in load_cases() if c.stale_programs()} == {}


def test_programs_swapped_on_disk_fail_verify_for_every_case_before_the_stale_page_runs(tmp_path):
    # The page holds its own copy of the programs: run as it is, it would prove the old ones.
    # Every case fails (gpu-only ones too: their page shows programs that are not the files),
    # with one line naming the page and the command that regenerates it, and nothing runs.
    from samedevice.verify import verify_case

    def never(*args, **kwargs):
        raise AssertionError("a stale page or its programs ran")

    swapped = load_cases(_swapped_checkout(tmp_path))
    assert len(swapped) == len(load_cases())
    for case in swapped:
        result = verify_case(case, runner=never, page_runner=never)
        assert result.status == FAIL, case.slug
        assert result.problems == [
            f"page: cases/{case.slug}.ipynb is stale (snippets/{case.slug}/broken.py and "
            f"snippets/{case.slug}/fixed.py changed since the page was made from it); "
            f"regenerate it: samedevice notebook {case.slug}"], case.slug


def test_verify_on_a_checkout_with_one_program_edited_names_the_stale_page(tmp_path):
    import os

    root = _swapped_checkout(tmp_path)
    case = CASES[0]
    # only fixed.py edited: restore broken.py
    (root / "snippets" / case.slug / "broken.py").write_bytes(case.broken_path.read_bytes())
    env = {**os.environ, "SAMEDEVICE_ROOT": str(root), "SAMEDEVICE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "samedevice", "verify", case.slug],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert (f"cases/{case.slug}.ipynb is stale (snippets/{case.slug}/fixed.py changed since the "
            f"page was made from it); regenerate it: samedevice notebook {case.slug}") in proc.stdout


def test_a_different_message_or_exception_is_a_failure():
    case = CASES[0]
    right = {"type": case.error.exception, "message": case.error.message_for("2.13.0").text}
    assert check_error(case, right, "2.13.0") == []
    altered = dict(right, message=right["message"].replace("cuda:0", "cuda:1"))
    assert any("message differs" in p for p in check_error(case, altered, "2.13.0"))
    wrong_type = dict(right, type="TypeError")
    assert check_error(case, wrong_type, "2.13.0") == [f"raised TypeError, expected {case.error.exception}"]
    assert check_error(case, None, "2.13.0") == ["broken.py finished without an error"]


def test_a_compile_errors_trailer_is_not_compared_but_its_message_is():
    from tests.test_cases import COMPILE_MESSAGE, USER_CODE, VERBOSE_HINT, _compile_case

    case = _compile_case()
    raised = {"type": "TorchRuntimeError", "message": COMPILE_MESSAGE + USER_CODE + VERBOSE_HINT}
    assert check_error(case, raised, "2.13.0") == []
    assert check_error(case, dict(raised, message=COMPILE_MESSAGE + USER_CODE), "2.13.0") == []
    other = raised["message"].replace("Explanation: Expected", "Explanation: Found")
    assert any("message differs" in p for p in check_error(case, dict(raised, message=other), "2.13.0"))


def test_values_that_differ_from_the_cpu_run_are_reported():
    import torch

    problems, count = compare_values({"x": torch.ones(2)}, {"x": torch.zeros(2)})
    assert count == 0 and problems and problems[0].startswith("x:")
    problems, count = compare_values({"x": torch.ones(2), "n": 3}, {"x": torch.ones(2), "n": 3})
    assert (problems, count) == ([], 1)


def test_unknown_case_is_a_one_line_error():
    out = subprocess.run([sys.executable, "-m", "samedevice", "verify", "no-such-case"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.startswith("samedevice verify: no case named 'no-such-case'")
    assert "Traceback" not in out.stderr


def test_cases_json_lists_every_case_with_its_metadata():
    out = subprocess.run([sys.executable, "-m", "samedevice", "cases", "--json"],
                         capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert [d["slug"] for d in data] == [c.slug for c in load_cases()]
    first = data[0]
    assert {"id", "family", "templates", "error", "upstream", "versions", "verified"} <= set(first)
    assert first["error"]["messages"][0]["text"].startswith(("Expected", "Input", "No backend",
                                                             "indices", "module", "Attempting",
                                                             "can't"))


# One case of each way a page runs its programs: cells on the simulator, `%run` of a program
# that reads files beside it, spawned ranks, and the unchanged CPU-only environment.
def _page_kind(case) -> str:
    beside = [p for p in case.broken_path.parent.iterdir() if p.name not in ("broken.py", "fixed.py")]
    return "files" if case.verify == "sim" and any(p.is_file() for p in beside) else case.verify


PAGE_KINDS = {_page_kind(c): c.slug for c in reversed(CASES)}


@pytest.mark.slow
def test_verify_runs_each_page_once_and_keeps_outputs_equal_to_the_stored_ones(tmp_path):
    import nbformat

    from samedevice.pages.notebook import comparable_outputs, same_output
    from samedevice.verify.page import load_page_run

    cases = [c for c in CASES if c.slug in PAGE_KINDS.values()]
    assert len(cases) == 4
    results = verify_cases(cases, jobs=2, pages_dir=tmp_path)
    assert {r.case.slug: r.status for r in results} == dict.fromkeys(PAGE_KINDS.values(), "pass")
    for case in cases:
        kept = load_page_run(case, tmp_path)
        assert kept is not None, case.slug
        stored = nbformat.read(case.notebook_path, as_version=4)
        for got, want in zip(comparable_outputs(kept), comparable_outputs(stored), strict=True):
            assert len(got) == len(want) and all(map(same_output, got, want)), case.slug


def test_a_kept_page_is_not_used_once_the_stored_page_changed(tmp_path):
    import dataclasses
    import shutil

    import nbformat

    from samedevice.verify.page import load_page_run, save_page_run

    case = CASES[0]
    (tmp_path / "cases").mkdir()
    moved = dataclasses.replace(case, root=tmp_path)
    shutil.copy(case.notebook_path, moved.notebook_path)
    nb = nbformat.read(moved.notebook_path, as_version=4)
    save_page_run(moved, nb, tmp_path / "run")
    assert load_page_run(moved, tmp_path / "run") is not None
    moved.notebook_path.write_text(moved.notebook_path.read_text() + "\n")
    assert load_page_run(moved, tmp_path / "run") is None


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(PAGE_KINDS))
def test_a_page_whose_programs_are_swapped_fails_verify(kind, tmp_path):
    # The page path has the mutation property too: regenerate the page from swapped programs
    import dataclasses
    import shutil

    import nbformat

    from samedevice.pages.notebook import build_notebook, executed_info
    from samedevice.sim.warm import WarmRunner
    from samedevice.verify import verify_case

    case = next(c for c in CASES if c.slug == PAGE_KINDS[kind])
    moved = dataclasses.replace(case, root=tmp_path)
    shutil.copytree(case.broken_path.parent, moved.broken_path.parent)
    moved.broken_path.write_bytes(case.fixed_path.read_bytes())
    moved.fixed_path.write_bytes(case.broken_path.read_bytes())
    moved.notebook_path.parent.mkdir()
    nbformat.write(build_notebook(moved, executed_info("sim")), moved.notebook_path)
    with WarmRunner() as warm:
        warm.wait_ready()
        assert warm.runs_pages
        result = verify_case(moved, runner=warm.run, page_runner=warm.run_page)
    assert result.status == FAIL
    assert result.page is not None  # the page ran (and stopped), not the programs
    assert "broken: broken.py finished without an error" in result.problems
    assert any(p.startswith("fixed: fixed.py did not finish: the page stopped: cell ")
               for p in result.problems), result.problems
