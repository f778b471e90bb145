"""Broken case data costs its own case, never the command (issue 29).

Each defect is made in a copy of the checkout's case files. ``cases``, ``cases --json``,
``explain`` and ``snippet`` must then say, in one line naming the file, what is wrong with it, and
go on with every other case: no traceback, and the exit status says whether the data had a defect.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from samedevice.cases import CaseError, get_case, repo_root
from samedevice.cli import main

ROOT = repo_root()
GOOD = "lightly-dino-loss-center"
OTHER = "astrai-inject-lora-after-model-to-cuda"
PASTE = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "cases", root / "cases", ignore=shutil.ignore_patterns("*.ipynb"))
    shutil.copytree(ROOT / "snippets", root / "snippets")
    monkeypatch.setenv("SAMEDEVICE_ROOT", str(root))
    monkeypatch.setenv("SAMEDEVICE_CACHE_DIR", str(tmp_path / "cache"))
    return root


def _nested(path: Path) -> None:
    path.write_text("a = " + "[" * 3000 + "]" * 3000 + "\n", encoding="utf-8")


def _duplicate_id(root: Path) -> Path:
    path = root / "cases" / "zz-duplicate.toml"
    path.write_text((root / "cases" / f"{OTHER}.toml").read_text(encoding="utf-8").replace(
        'id = "', 'id = "SD-0001" # was "', 1), encoding="utf-8")
    shutil.copytree(root / "snippets" / OTHER, root / "snippets" / "zz-duplicate")
    return path


# name -> (make the defect in the copy, the file the line must name, the words it must say)
DEFECTS = {
    "not UTF-8": (lambda r: (r / "cases/zz-bad.toml").write_bytes(b"\xff\xfe id = 1"),
                  "cases/zz-bad.toml", "not UTF-8 text (byte 0xff at offset 0)"),
    "a folder": (lambda r: (r / "cases/zz-bad.toml").mkdir(), "cases/zz-bad.toml", "is a folder, not a file"),
    "a link loop": (lambda r: (r / "cases/zz-bad.toml").symlink_to("zz-bad.toml"),
                    "cases/zz-bad.toml", "cannot be read (Too many levels of symbolic links)"),
    "nested 3,000 deep": (lambda r: _nested(r / "cases/zz-bad.toml"), "cases/zz-bad.toml",
                          "invalid TOML (nested too deeply to read)"),
    "an id already taken": (_duplicate_id, "cases/zz-duplicate.toml", f"id SD-0001 is already used by {GOOD}"),
    "a program not UTF-8": (lambda r: (r / f"snippets/{OTHER}/fixed.py").write_bytes(b"x = '\xe9'\n"),
                            f"snippets/{OTHER}/fixed.py", "not UTF-8 text (byte 0xe9 at offset 5)"),
    "a program missing": (lambda r: (r / f"snippets/{OTHER}/broken.py").unlink(),
                          f"cases/{OTHER}.toml", f"missing snippets/{OTHER}/broken.py"),
}


def _one_line_about(err: str, command: str, root: Path, file: str, words: str) -> None:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line]
    assert lines == [f"samedevice {command}: skipped broken case data: {root / file}: {words}"]


@pytest.mark.parametrize("defect", DEFECTS)
def test_every_command_names_the_defect_in_one_line_and_goes_on(checkout, capsys, defect):
    make, file, words = DEFECTS[defect]
    make(checkout)
    left_out = OTHER if OTHER in file else None

    assert main(["cases"]) == 1
    out, err = capsys.readouterr()
    _one_line_about(err, "cases", checkout, file, words)
    assert f"{GOOD}: " in out and (left_out is None or f"{left_out}: " not in out)

    assert main(["cases", "--json"]) == 1
    out, err = capsys.readouterr()
    _one_line_about(err, "cases", checkout, file, words)
    slugs = {c["slug"] for c in json.loads(out)}
    assert GOOD in slugs and len(slugs) == (62 if left_out else 63)

    assert main(["snippet", GOOD, "--broken"]) == 0
    out, err = capsys.readouterr()
    assert out == (checkout / "snippets" / GOOD / "broken.py").read_text(encoding="utf-8") and err == ""

    sys.stdin = io.TextIOWrapper(io.BytesIO(PASTE.encode()))
    try:
        assert main(["explain", "--json"]) == 0
    finally:
        sys.stdin = sys.__stdin__
    out, err = capsys.readouterr()
    _one_line_about(err, "explain", checkout, file, words)
    assert json.loads(out)["template"] == "T1"


def test_the_snippet_of_a_broken_case_says_what_is_wrong_with_it(checkout, capsys):
    DEFECTS["a program not UTF-8"][0](checkout)
    assert main(["snippet", OTHER, "--fixed"]) == 2
    err = capsys.readouterr().err
    assert err == f"samedevice snippet: {checkout / 'snippets' / OTHER / 'fixed.py'}: not UTF-8 text (byte 0xe9 at offset 5)\n"


def test_a_broken_case_file_is_named_when_its_own_slug_is_asked_for(checkout):
    (checkout / "cases" / f"{OTHER}.toml").write_bytes(b"\x80")
    with pytest.raises(CaseError, match=rf"{OTHER}\.toml: not UTF-8 text \(byte 0x80 at offset 0\)$"):
        get_case(OTHER, checkout)


@pytest.mark.parametrize(("content", "words"), [
    ("{bad", "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    ("[1, 2]", "must hold a JSON object, not list"),
    ('{"records": {"date": 1}}', "records: must be a list of tables"),
    (b"\xff", "not UTF-8 text (byte 0xff at offset 0)"),
])
def test_a_broken_record_file_costs_that_case_its_records_only(checkout, capsys, content, words):
    path = checkout / "cases" / f"{OTHER}.verified.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert main(["cases", "--json"]) == 1
    out, err = capsys.readouterr()
    assert err == f"samedevice cases: skipped broken case data: {path}: {words}\n"
    rows = {c["slug"]: c for c in json.loads(out)}
    assert len(rows) == 63 and rows[OTHER]["verified"] is None and rows[GOOD]["verified"]


def test_recording_never_overwrites_a_record_file_that_does_not_read(checkout):
    from samedevice.verify.records import add_record

    path = checkout / "cases" / f"{OTHER}.verified.json"
    path.write_text('{"records": [{"date": "2026-01-01", "torch": "2.13.0"}], oops', encoding="utf-8")
    before = path.read_bytes()
    record = {"device": "sim", "torch": "2.13.0", "gpu": None, "date": "2026-12-03", "result": "pass"}
    with pytest.raises(CaseError, match="not valid JSON"):
        add_record(get_case(OTHER, checkout), record)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.glob(f"{OTHER}.verified.json*")] == [path.name]


def test_an_upstream_record_that_does_not_read_is_named(checkout, capsys):
    path = checkout / "cases" / f"{OTHER}.upstream.json"
    path.write_text("[]", encoding="utf-8")
    assert main(["cases", "--json"]) == 1
    assert capsys.readouterr().err == f"samedevice cases: skipped broken case data: {path}: must hold a JSON object, not list\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file without read permission")
def test_an_unreadable_case_file_is_named(checkout, capsys):
    path = checkout / "cases" / "zz-bad.toml"
    path.write_text("id = 1\n", encoding="utf-8")
    path.chmod(0)
    assert main(["cases"]) == 1
    assert capsys.readouterr().err == f"samedevice cases: skipped broken case data: {path}: cannot be read (Permission denied)\n"
