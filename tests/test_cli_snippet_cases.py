"""`samedevice cases` (plain titles) and `samedevice snippet` (a case's programs, or one line)."""

from __future__ import annotations

from samedevice.cases import get_case
from samedevice.cli import main


def test_cases_shows_titles_without_markdown(capsys):
    assert main(["cases"]) == 0
    out = capsys.readouterr().out
    assert "lightly-dino-loss-center: Lightly DINOLoss: the center alias stays on the CPU after .to()" in out
    assert "`" not in out


def test_snippet_prints_or_writes_the_program(capsys, tmp_path):
    case = get_case("lightly-dino-loss-center")
    assert main(["snippet", case.slug, "--fixed"]) == 0
    assert capsys.readouterr().out == case.fixed_path.read_text()
    dest = tmp_path / "broken.py"
    assert main(["snippet", case.id, "--broken", "-o", str(dest)]) == 0
    assert dest.read_text() == case.broken_path.read_text()
    assert f"run it with: samedevice run {dest}" in capsys.readouterr().err


def test_snippet_bad_input_is_one_line(capsys, tmp_path):
    assert main(["snippet", "no-such-case", "--broken"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("samedevice snippet: no case named 'no-such-case'") and err.count("\n") == 1
    assert main(["snippet", "lightly-dino-loss-center", "--broken", "-o", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_cases_json_links_each_page_from_the_configured_base(capsys, monkeypatch):
    import json

    monkeypatch.setenv("SAMEDEVICE_DOCS_URL", "http://127.0.0.1:8000/samedevice/")
    assert main(["cases", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)[0]
    assert first["url"] == f"http://127.0.0.1:8000/samedevice/{first['page']}"
