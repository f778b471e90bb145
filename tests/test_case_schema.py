"""Case files are checked against data/case.schema.json: one line per malformed value, naming the
file and the field; `samedevice cases` stops on them, `samedevice explain` skips the file."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from samedevice.cases import CASE_SCHEMA, CaseError, parse_case, repo_root, schema_problems

ROOT = repo_root()
GOOD = ROOT / "cases" / "lightly-dino-loss-center.toml"


def _problems(tmp_path: Path, edit) -> list[str]:
    data = tomllib.loads(GOOD.read_text(encoding="utf-8"))
    edit(data)
    return schema_problems(tmp_path / "x.toml", data)


def test_the_schema_is_valid_and_every_case_passes():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(json.loads(CASE_SCHEMA.read_text(encoding="utf-8")))
    for path in sorted((ROOT / "cases").glob("*.toml")):
        assert schema_problems(path, tomllib.loads(path.read_text(encoding="utf-8"))) == [], path


def test_library_frames_as_one_string_is_rejected_not_split(tmp_path):
    problems = _problems(tmp_path, lambda d: d.update(library_frames="a/b.py"))
    assert len(problems) == 1
    assert problems[0].startswith(f"{tmp_path / 'x.toml'}: library_frames: 'a/b.py' is not valid (")
    assert "a list, never one string" in problems[0]


@pytest.mark.parametrize("spec", ["2.0+", ">= two", ">=2.0;<2.8", "", "~=2.1"])
def test_bad_version_spec_is_rejected(tmp_path, spec):
    problems = _problems(tmp_path, lambda d: d["error"]["messages"][0].update(torch=spec))
    assert len(problems) == 1 and ": error.messages.0.torch: " in problems[0]


@pytest.mark.parametrize("spec", [">=2.0,<2.8", ">=1.6", "==2.13.0", " >= 2.1 , != 2.4 "])
def test_good_version_spec_passes(tmp_path, spec):
    assert _problems(tmp_path, lambda d: d["error"]["messages"][0].update(torch=spec)) == []


def test_devices_needed_is_a_positive_integer_of_a_sane_size(tmp_path):
    assert _problems(tmp_path, lambda d: d.update(devices_needed=2)) == []
    assert ": devices_needed: 0 is not valid (" in _problems(tmp_path, lambda d: d.update(devices_needed=0))[0]
    assert ": devices_needed: 100000 is not valid (" in _problems(tmp_path, lambda d: d.update(devices_needed=100000))[0]
    assert ": devices_needed: '2' is not valid (must be an integer)" in _problems(tmp_path, lambda d: d.update(devices_needed="2"))[0]


@pytest.mark.parametrize(("edit", "line"), [
    (lambda d: d.update(libary_frames=["a.py"]), "x.toml: libary_frames: unknown key; did you mean 'library_frames'?"),
    (lambda d: d["error"].update(argumnet="mat1"), "x.toml: error.argumnet: unknown key; did you mean 'argument'?"),
    (lambda d: d["page"].update(fixx="x"), "x.toml: page.fixx: unknown key; did you mean 'fix'?"),
    (lambda d: d["error"]["messages"][0].update(txt="x"), "x.toml: error.messages.0.txt: unknown key; did you mean 'text'?"),
    # no key is near: the known ones are listed instead
    (lambda d: d.update(gpus=2), "x.toml: gpus: unknown key (known: check, devices_needed, error, family, id,"),
])
def test_an_unknown_key_is_an_error_that_offers_the_nearest_known_key(tmp_path, edit, line):
    problems = _problems(tmp_path, edit)
    assert len(problems) == 1
    assert line in problems[0]


def test_a_version_spec_with_absurd_numbers_is_rejected_by_the_schema(tmp_path):
    # 5,000 digits: int() refuses more than 4,300, so this used to fail later, inside verify
    problems = _problems(tmp_path, lambda d: d["error"]["messages"][0].update(torch=">=" + "9" * 5000))
    assert len(problems) == 1 and ": error.messages.0.torch: '>=999" in problems[0]


def test_an_unknown_check_rule_is_named(tmp_path):
    text = re.sub(r"^check = .*$", 'check = ["SD201", "SD9999"]', GOOD.read_text(encoding="utf-8"), flags=re.M)
    path = tmp_path / "cases" / "lightly-dino-loss-center.toml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CaseError) as e:
        parse_case(path, tmp_path)
    assert str(e.value) == (f"{path}: check: 'SD9999' is not a rule of samedevice check "
                            "(`samedevice check --list-rules` lists them)")


def test_every_malformed_value_gets_its_own_line(tmp_path):
    def edit(d):
        d["family"] = "F42"
        d["templates"] = "T1"
        d["upstream"]["issue"] = "http://example.org/x"
        del d["page"]["why"]

    problems = _problems(tmp_path, edit)
    fields = [p.split(": ")[1] for p in problems]
    assert sorted(fields) == ["family", "page.why", "templates", "upstream.issue"]
    bad = tmp_path / "cases" / "bad-case.toml"
    bad.parent.mkdir()
    bad.write_text('id = "SD-9999"\ntitle = "x"\nfamily = "F42"\nlibrary_frames = "a/b.py"\n', encoding="utf-8")
    with pytest.raises(CaseError) as e:
        parse_case(bad, tmp_path)
    lines = str(e.value).split("\n")
    assert all(line.startswith(f"{bad}: ") for line in lines)
    assert {line.split(": ")[1] for line in lines} >= {"family", "library_frames", "summary", "error", "page"}


@pytest.fixture(scope="module")
def broken_checkout(tmp_path_factory) -> Path:
    """A copy of the checkout's cases and snippets with one malformed case file added."""
    root = tmp_path_factory.mktemp("checkout")
    shutil.copytree(ROOT / "cases", root / "cases")
    shutil.copytree(ROOT / "snippets", root / "snippets")
    text = GOOD.read_text(encoding="utf-8").replace('id = "SD-0001"', 'id = "SD-9998"')
    text = text.replace('library_frames = ["lightly/loss/dino_loss.py", "lightly/models/modules/center.py"]', 'library_frames = "a/b.py"')
    text = text.replace('torch = ">=1.6"', 'torch = "1.6+"')
    (root / "cases" / "zz-broken.toml").write_text(text, encoding="utf-8")
    return root


def _run(root: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    env = {**os.environ, "SAMEDEVICE_ROOT": str(root), "SAMEDEVICE_CACHE_DIR": str(root / "cache")}
    return subprocess.run([sys.executable, "-m", "samedevice", *args], input=stdin, capture_output=True, env=env, timeout=120)


def test_cases_command_names_file_and_field_for_each_problem(broken_checkout):
    r = _run(broken_checkout, "cases")
    err = r.stderr.decode()
    # the other cases are still listed; the exit status says the data has a defect
    assert r.returncode == 1 and "lightly-dino-loss-center: Lightly DINOLoss" in r.stdout.decode()
    assert "SD-9998" not in r.stdout.decode()
    assert "Traceback" not in err
    assert "zz-broken.toml: library_frames: 'a/b.py' is not valid" in err
    assert "zz-broken.toml: error.messages.0.torch: '1.6+' is not valid" in err


def test_explain_skips_a_malformed_case_file_and_still_answers(broken_checkout):
    paste = b"RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    r = _run(broken_checkout, "explain", "--json", stdin=paste)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert json.loads(r.stdout)["template"] == "T1"
    assert "Traceback" not in err
    # once per problem, not once per use of the case list
    assert err.count("zz-broken.toml: library_frames:") == 1
    assert err.startswith("samedevice explain: skipped broken case data: ")


@pytest.mark.parametrize(
    ("field", "value"),
    [("check", "SD201"), ("check", ["F2"]), ("situations", ["Input Not Moved"]), ("situations", "input-not-moved")],
)
def test_check_rules_and_situations_are_lists_of_their_own_labels(tmp_path, field, value):
    problems = _problems(tmp_path, lambda d: d.update({field: value}))
    assert len(problems) == 1
    assert problems[0].startswith(f"{tmp_path / 'x.toml'}: {field}")
