"""The message catalogue (data/templates.toml): complete, parseable by its own rules, rendered."""

from __future__ import annotations

import re

import pytest

from samedevice.explain.catalogue import (
    TEMPLATE_IDS,
    load_templates,
    render_messages_page,
    render_template_page,
)
from samedevice.explain.dialect import compiled_exact_case

TEMPLATES = load_templates()
FORMS = [f for t in TEMPLATES.values() for f in t["forms"]]
# every era row that has its own example (a form, or one era of a form)
ERAS = [
    (f, rule)
    for f in FORMS
    for rule in (f["era_rules"] or [None])
]


def test_all_templates_with_their_fields():
    assert tuple(TEMPLATES) == TEMPLATE_IDS
    for tid, t in TEMPLATES.items():
        assert t["title"] and t["shape"] and t["meaning"] and t["next_step"], tid
        assert t["exception"] in {"RuntimeError", "TypeError"}, tid
        assert t["families"] and all(re.fullmatch(r"F(?:[1-9]|10)", f) for f in t["families"]), tid
        assert len(set(t["families"])) == len(t["families"]), tid
        assert t["op_families"], tid
        assert t["eras"], f"{tid} has no history rows"
        assert t["page"] == f"messages/{tid.lower()}/"


def test_every_link_is_https():
    links = [link for t in TEMPLATES.values() for row in t["eras"] for link in row["links"]]
    assert links, "the catalogue names no upstream change"
    assert all(link["url"].startswith("https://github.com/") for link in links)
    pytorch = {link["url"] for link in links if "/pytorch/pytorch/" in link["url"]}
    # the changes error-messages.md names: generated checks, typo fix, dispatch key, 2.8 text, GB5173
    for number in ("56570", "61459", "90674", "155085", "185412", "20690", "5815"):
        assert any(url.endswith("/" + number) for url in pytorch), number


@pytest.mark.parametrize(
    ("form", "era"), ERAS, ids=[f"{f['id']}:{r['id']}" if r else f["id"] for f, r in ERAS]
)
def test_each_era_example_reads_as_its_own_template_and_era(explain, form, era):
    example = era["example"] if era else form["example"]
    result = explain(example)
    expected = form["template"]
    if form["multi_accel"] and re.search(r"cuda:\d and cuda:\d", example):
        expected = form["multi_accel"]
    assert result["template"] == expected
    assert result["form"] == form["id"]
    assert result["torch_range"] == (era["torch"] if era else form["torch"])


def test_every_example_is_located_by_an_anchor(kb):
    anchor = compiled_exact_case(kb["messages"]["anchor"])
    examples = [era["example"] if era else form["example"] for form, era in ERAS]
    assert [e for e in examples if not anchor.search(e.lower())] == []


def test_needles_are_in_every_example():
    for form in FORMS:
        low = form["example"].lower()
        assert all(n in low for n in form["needles"]), form["id"]


def test_t12_eras_are_read_as_two_accelerators(explain):
    for row in TEMPLATES["T12"]["eras"]:
        assert explain(row["example"])["template"] == "T12"


def test_messages_page(kb):
    cases = [
        {"id": "SD-9001", "title": "A demo case", "templates": ["T2", "T1"], "page": "cases/demo-case/"},
    ]
    families = kb["families"]
    page = render_messages_page(url_for=lambda url: "/" + url, cases=cases, families=families)
    assert page.startswith("# Error messages\n")
    for tid, t in TEMPLATES.items():
        assert f'<a id="{tid.lower()}"></a>' in page
        assert f"## {tid}: {t['title']}" in page
    # eras with examples and provenance
    assert "`Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when checking arugment for argument mat1 in method wrapper_addmm)`" in page
    assert "(https://github.com/pytorch/pytorch/pull/90674)" in page
    assert "| 2.8.0 - 2.14.1 (current) |" in page
    # families and cases that produce each template, through url_for
    assert "[F8 Multi-device placement](/families/f8/)" in page
    assert page.count("[SD-9001 A demo case](/cases/demo-case/)") == 2  # under T1 and T2
    assert "[explain](/paste/)" in page


def test_messages_page_default_links_are_relative(kb):
    page = render_messages_page(cases=[], families=kb["families"])
    assert "](../families/f3/)" in page


def test_template_page(kb):
    page = render_template_page("T9", url_for=lambda url: "/" + url, cases=[], families=kb["families"])
    assert page.splitlines()[2] == "# T9: " + TEMPLATES["T9"]["title"]
    assert "device_ids[0]" in page


def test_a_top_level_alternation_has_no_needles():
    # words of the first alternative are not in a text the second one matches
    from samedevice.explain.catalogue import needles

    assert needles("the nvidia driver is too old|cuda driver version is insufficient") == []
    assert needles(r"no cuda gpus (?:are|were) available") == ["cuda", "gpus", "available"]  # inside a group: fine
    assert needles(r"abc\|def") == ["abc", "def"]  # an escaped pipe is a character
    assert needles("abc [|] def") == ["abc", "def"]  # so is one in a class


def test_needles_come_from_all_literal_text_not_only_the_prefix():
    # a form beginning with a group had none, and its regex ran on every window of a paste
    # (80 KB of `same device aaaa...` took 28 s)
    from samedevice.explain.catalogue import needles

    assert needles(r"(?P<wrapper>\w{1,60}) is not compiled with (?:gpu|cuda) support") == \
        ["not", "compiled", "with", "support"]
    assert needles(r"at index \d+ - expected (?:device|type)? x{0,200}? but got") == ["index", "expected", "but", "got"]
    assert needles(r"abc?def") == ["def"]  # `c?` is optional: "ab" then "def"
    starting_with_a_group = [f for f in FORMS if f["regex"].startswith("(?P<")]
    assert starting_with_a_group and all(f["needles"] for f in starting_with_a_group)
