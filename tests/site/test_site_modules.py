"""The site modules on small inputs, without building the site."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from samedevice.cases import FAMILY_IDS, TEMPLATE_IDS, repo_root
from samedevice.site import checks, generated, navigation, notebook_html, search_fields, sitedata

ANSI_TRACEBACK = [
    "\x1b[31m---------------------------------------------------------------------------\x1b[39m",
    "\x1b[31mRuntimeError\x1b[39m                              Traceback (most recent call last)",
    "\x1b[36mCell\x1b[39m \x1b[32mIn[2]\x1b[39m, line 1\n\x1b[32m----> 1\x1b[39m forward()\n",
    "\x1b[31mRuntimeError\x1b[39m: Expected all tensors to be on the same device, but got mat1 is on "
    "cuda:0, different from other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)",
]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A small notebook through mkdocs-jupyter's converter, with the site's options."""
    from mkdocs_jupyter.nbconvert2 import nb2html

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    hidden = nbformat.v4.new_code_cell("import samedevice  # HIDDEN-SETUP")
    hidden.metadata["tags"] = ["remove-cell"]
    failing = nbformat.v4.new_code_cell("forward()")
    failing.metadata["tags"] = ["raises-exception"]
    failing.outputs = [nbformat.v4.new_output("error", ename="RuntimeError", evalue="...",
                                              traceback=ANSI_TRACEBACK)]
    printing = nbformat.v4.new_code_cell("print('fixed')")
    printing.outputs = [nbformat.v4.new_output("stream", name="stdout", text="fixed\n")]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A head left on `cpu`\n\nSummary."),
        hidden,
        nbformat.v4.new_markdown_cell("## Error\n\n```text\nRuntimeError: Expected all tensors\n```"),
        failing,
        nbformat.v4.new_markdown_cell("## Fix"),
        printing,
        nbformat.v4.new_markdown_cell("Versions:\n\n| | |\n|---|---|\n| Package | `x` |\n\n"
                                      "| Release | Observed |\n|---|---|\n| 1.0 | pass |"),
    ]
    path = tmp_path_factory.mktemp("nb") / "case.ipynb"
    nbformat.write(nb, path)
    return nb2html(str(path), theme="", allow_errors=False, no_prompt=True,
                   remove_tag_config={"remove_cell_tags": ["remove-cell"]}, custom_mathjax_url="")


def test_converter_output_is_heavy_before_cleaning(converted: str) -> None:
    """The reason notebook_html exists: guard against a converter that stopped inlining CSS."""
    assert len(converted) > 300_000 and "<style" in converted


def test_cleaning_keeps_content_and_drops_weight(converted: str) -> None:
    clean = notebook_html.clean_notebook_html(converted)
    assert len(clean.html) < 20_000
    for gone in ("<style", "<script", "celltoolbar", "clipboard-copy", "Copied!", "HIDDEN-SETUP",
                 'id="cell-id=', "anchor-link", "<!--"):
        assert gone not in clean.html, gone
    assert '<span class="ansi-red-fg">RuntimeError</span>' in clean.html
    assert '<pre>fixed\n</pre>' in clean.html and "jp-OutputArea-output" in clean.html
    assert '<div class="highlight"><pre><code>' in clean.html
    assert clean.html.startswith("<h1")  # no untitled search section before the title


def test_cleaning_rebuilds_title_and_toc(converted: str) -> None:
    clean = notebook_html.clean_notebook_html(converted)
    assert clean.title == "A head left on cpu"
    [h1] = clean.toc_tokens
    assert h1["id"] == "a-head-left-on-cpu"
    assert [(t["level"], t["id"]) for t in h1["children"]] == [(2, "error"), (2, "fix")]
    assert {"a-head-left-on-cpu", "error", "fix"} == clean.anchor_ids
    assert '<h2 id="error">Error<a class="headerlink" href="#error"' in clean.html


def test_key_value_tables_lose_their_empty_header_row(converted: str) -> None:
    clean = notebook_html.clean_notebook_html(converted)
    assert clean.html.count("<table") == 2
    assert clean.html.count("<thead") == 1 and "<th>Release</th>" in clean.html
    assert "<td>Package</td>" in clean.html


def test_message_blocks_wrap_and_code_scrolls(converted: str) -> None:
    clean = notebook_html.clean_notebook_html(converted)
    assert '<div class="highlight sd-wrap"><pre><code>' in clean.html  # the text block
    assert clean.html.count("sd-wrap") == 1  # not the highlighted code cells


def _page(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body>{body}</body></html>")
    return path


def test_external_references_flags_fetches_and_unlisted_links(tmp_path: Path) -> None:
    _page(tmp_path, "index.html", """
        <script src="https://unpkg.com/iframe-worker/shim"></script>
        <link rel="stylesheet" href="//fonts.googleapis.com/css">
        <img srcset="a.png 1x, https://cdn.example/b.png 2x">
        <div style="background: url('https://cdn.example/bg.png')"></div>
        <style>@import "https://cdn.example/x.css";</style>
        <a href="https://github.com/rasbt/LLMs-from-scratch/issues/172">ok</a>
        <a href="https://evil.example/">not listed</a>
        <a href="cases/">local</a>""")
    (tmp_path / "x.css").write_text("a{background:url(https://cdn.example/c.png)}")
    problems = checks.external_references(tmp_path, {"github.com"})
    flagged = " ".join(problems)
    for url in ("unpkg.com", "fonts.googleapis.com", "cdn.example/b.png", "cdn.example/bg.png",
                "cdn.example/x.css", "evil.example", "cdn.example/c.png"):
        assert url in flagged, url
    assert "github.com" not in flagged and len(problems) == 7


def test_broken_local_links(tmp_path: Path) -> None:
    _page(tmp_path, "a/index.html", '<a href="../b/">b</a><a href="../c/">c</a><a href="#x">x</a>')
    _page(tmp_path, "b/index.html", '<script src="../assets/x.js"></script>')
    problems = checks.broken_local_links(tmp_path)
    assert len(problems) == 2
    assert any("c/index.html missing" in p for p in problems)
    assert any("assets/x.js missing" in p for p in problems)


def test_oversized_pages(tmp_path: Path) -> None:
    _page(tmp_path, "big.html", "x" * 300_001)
    _page(tmp_path, "small.html", "x")
    assert [p for p, _ in checks.oversized_pages(tmp_path)] == ["big.html"]


SEP = r'[\s\-_,:!=\[\]()"`/]+|\.(?!\d)'


def test_signature_skips_tokens_every_paste_would_hit() -> None:
    shared = {"in", "to", "for", "tensors", "expected"}
    case = type("C", (), {})()
    case.error = type("E", (), {"op": "torch.index_select", "argument": "input", "devices": ("cuda:0", "cpu")})()
    assert search_fields.signature(case, shared, SEP) == ["0", "cpu", "cuda", "select"]
    case.error.op, case.error.argument = "nll_loss_forward", "total_weight"
    assert search_fields.signature(case, shared, SEP) == ["0", "cpu", "cuda", "loss", "nll", "weight"]


def test_tokenize_like_materials_search() -> None:
    assert search_fields.tokenize("wrapper_CUDA_addmm) cuda:0, torch.load v2.8", SEP) == [
        "wrapper", "cuda", "addmm", "cuda", "0", "torch", "load", "v2.8"]


@pytest.fixture(scope="module")
def data() -> sitedata.SiteData:
    return sitedata.load_site_data(repo_root())


def test_expand_nav_builds_the_case_tree(data: sitedata.SiteData) -> None:
    nav = navigation.expand_nav([{"Home": "index.md"}, {"Cases": "cases/index.md"}], data)
    assert nav[0] == {"Home": "index.md"}
    cases = nav[1]["Cases"]
    assert cases[0] == "cases/index.md"
    by_family = cases[1]["By family"]
    assert len(by_family) == 1 + len(FAMILY_IDS)
    listed = [v for fam in by_family[1:] for item in next(iter(fam.values()))[1:] for v in item.values()]
    assert sorted(listed) == sorted(f"cases/{c.slug}.ipynb" for c in data.cases)
    assert len(cases[2]["By message"]) == len(TEMPLATE_IDS)


def test_expand_nav_requires_the_cases_entry(data: sitedata.SiteData) -> None:
    with pytest.raises(navigation.NavError):
        navigation.expand_nav([{"Home": "index.md"}], data)


def test_link_maker_links_sources_and_refuses_unknown_urls() -> None:
    url_for = generated.link_maker("messages/index.md", {"families/f2/index.md", "paste.md",
                                                         "cases/x.ipynb", "index.md"})
    assert url_for("families/f2/") == "../families/f2/index.md"
    assert url_for("paste/") == "../paste.md"
    assert url_for("cases/x/#why") == "../cases/x.ipynb#why"
    assert url_for("") == "../index.md"
    with pytest.raises(ValueError, match="no page of the site"):
        url_for("families/f11/")


def test_generated_pages_are_where_page_uris_says(data: sitedata.SiteData) -> None:
    assert set(generated.virtual_pages(data, None)) == set(generated.page_uris())


def test_templates_from_catalogue_shapes() -> None:
    as_map = sitedata.templates_from_catalogue({"T2": {"title": "got NAME", "shape": "but got X", "meaning": "m"}})
    assert as_map["T2"] == sitedata.Template("T2", "got NAME", "but got X", "m")
    assert as_map["T1"] == sitedata.Template("T1") and len(as_map) == len(TEMPLATE_IDS)
    as_list = sitedata.templates_from_catalogue([{"id": "T3", "name": "conv", "text": "Input type"}])
    assert as_list["T3"].title == "conv" and as_list["T3"].text == "Input type"
    with pytest.raises(ValueError, match="T14"):
        sitedata.templates_from_catalogue({"T14": {}})


def test_distinct_words_are_long_first_line_words_no_other_message_holds() -> None:
    def case(slug: str, text: str):
        c = type("C", (), {})()
        c.slug = slug
        c.error = type("E", (), {"exception": "RuntimeError", "op": "", "argument": "", "devices": (),
                                 "messages": [type("M", (), {"text": text})()]})()
        return c

    rnn = case("rnn", "Input and parameter tensors are not at the same device, found input tensor at cpu")
    t1 = case("t1", "Expected all tensors to be on the same device\n  Hint: Move inputs, parameters")
    words = search_fields.distinct_words([rnn, t1], SEP)
    # "parameter" and "tensor" prefix the other's "parameters" and "tensors" (a paste of the RNN
    # text hits neither of those); "found" and "input" are short; "tensors" is not distinct to t1
    # (the RNN's "tensors"); a second line of a message never counts ("inputs", "parameters")
    assert words == {"rnn": {"parameter", "tensor"}, "t1": {"expected"}}
