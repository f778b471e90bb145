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


def test_cases_ends_with_a_legend_of_every_family_template_and_verify_value_it_shows(capsys):
    from samedevice.cases import families, load_cases, template_titles

    assert main(["cases"]) == 0
    out = capsys.readouterr().out
    legend = out[out.index("FAMILY (root cause):"):]
    cases = load_cases()
    for f in {c.family for c in cases}:
        assert f"  {f:<4} {families()[f]['title']}\n" in legend
    for t in {c.error.template for c in cases}:
        assert f"  {t:<4} {template_titles()[t]}\n" in legend
    assert "  sim      proved on the simulated accelerator (one process)" in legend
    assert "  F2   Unregistered state\n" in legend


def test_an_unknown_slug_offers_the_nearest_not_every_slug(capsys):
    assert main(["snippet", "lightly-dino", "--broken"]) == 2
    err = capsys.readouterr().err
    assert err == ("samedevice snippet: no case named 'lightly-dino'; did you mean "
                   "lightly-dino-loss-center? (`samedevice cases` lists all "
                   f"{len(__import__('samedevice.cases').cases.load_cases())})\n")
    assert main(["verify", "nothing-like-it"]) == 2
    assert "did you mean" not in capsys.readouterr().err
