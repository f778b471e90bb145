"""Case pages and the pages generated from the registry."""

from __future__ import annotations

import html
import json
import posixpath
import re

import pytest

from samedevice.cases import FAMILY_IDS, TEMPLATE_IDS, load_cases, repo_root
from samedevice.site.generated import plain
from tests.site.sitebuild import BuiltSite, article, squash, visible_text

CASES = load_cases(repo_root())
SLUGS = [c.slug for c in CASES]
HIDDEN_TAG = "remove-cell"


def _case(built: BuiltSite, slug: str):
    return next(c for c in built.cases if c.slug == slug)


def _content(built: BuiltSite, url: str) -> str:
    return article(built.page(url).read_text(encoding="utf-8"))


def linked_cases(built: BuiltSite, url: str) -> set[str]:
    """Slugs of the case pages the content of the page at ``url`` links to."""
    found = set()
    for href in re.findall(r'href="([^"#]*)', _content(built, url)):
        if "://" in href or not href:
            continue
        target = posixpath.normpath(posixpath.join(url, href))
        m = re.fullmatch(r"cases/([a-z0-9-]+)", target)
        if m:
            found.add(m.group(1))
    return found


def _code_cells(slug: str, root) -> list[tuple[list[str], str]]:
    nb = json.loads((root / "cases" / f"{slug}.ipynb").read_text(encoding="utf-8"))
    return [(c.get("metadata", {}).get("tags", []), "".join(c["source"]))
            for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("slug", SLUGS)
def test_case_page_shows_title_every_message_and_downloads(built_site: BuiltSite, slug: str) -> None:
    case = _case(built_site, slug)
    page = built_site.page(case.page_url)
    assert page.is_file(), f"no page at {case.page_url}"
    text = squash(visible_text(_content(built_site, case.page_url)))
    assert squash(plain(case.title)) in text
    for m in case.error.messages:
        assert squash(m.text) in text, f"{slug}: message for torch {m.torch} not on the page"
    here = built_site.site / "cases" / slug
    assert (here / "broken.py").read_bytes() == case.broken_path.read_bytes()
    assert (here / "fixed.py").read_bytes() == case.fixed_path.read_bytes()
    assert (here / f"{slug}.ipynb").read_bytes() == case.notebook_path.read_bytes()


@pytest.mark.parametrize("slug", SLUGS)
def test_case_page_head_has_plain_title_and_description(built_site: BuiltSite, slug: str) -> None:
    case = _case(built_site, slug)
    page = built_site.page(case.page_url).read_text(encoding="utf-8")
    assert f"<title>{plain(case.title)} - samedevice</title>" in page
    description = html.escape(plain(case.summary), quote=True)
    assert f'<meta name="description" content="{description}">' in page


@pytest.mark.parametrize("slug", SLUGS)
def test_hidden_cells_do_not_render_and_visible_ones_do(built_site: BuiltSite, slug: str) -> None:
    text = squash(visible_text(_content(built_site, f"cases/{slug}/")))
    cells = _code_cells(slug, built_site.root)
    hidden = [src for tags, src in cells if HIDDEN_TAG in tags]
    shown = [src for tags, src in cells if HIDDEN_TAG not in tags]
    assert shown, f"{slug}: no visible code cell"
    for src in shown:  # the comparison can see code at all
        assert squash(src) in text, f"{slug}: visible cell missing: {src[:60]!r}"
    for src in hidden:
        assert squash(src) not in text, f"{slug}: hidden cell rendered: {src[:60]!r}"


def test_some_case_has_hidden_cells(built_site: BuiltSite) -> None:
    """Otherwise the test above proves nothing about remove_tag_config."""
    assert any(HIDDEN_TAG in tags for c in built_site.cases for tags, _ in _code_cells(c.slug, built_site.root))


@pytest.mark.parametrize("slug", SLUGS)
def test_no_cell_tags_prompts_or_clipboard_widget(built_site: BuiltSite, slug: str) -> None:
    content = _content(built_site, f"cases/{slug}/")
    text = visible_text(content)
    for noise in ("raises-exception", HIDDEN_TAG, "Copied!", "In [", "Out["):
        assert noise not in text, f"{slug}: {noise!r} shown"
    for markup in ("celltoolbar", "clipboard-copy", "jp-InputPrompt", 'id="cell-id='):
        assert markup not in content, f"{slug}: {markup!r} left in the HTML"


@pytest.mark.parametrize("slug", SLUGS)
def test_table_of_contents_points_at_headings(built_site: BuiltSite, slug: str) -> None:
    page = built_site.page(f"cases/{slug}/").read_text(encoding="utf-8")
    toc = page[page.index('<nav class="md-nav md-nav--secondary"'):]
    toc = toc[:toc.index("</nav>")]
    anchors = re.findall(r'href="#([^"]+)"', toc)
    ids = set(re.findall(r'<h[1-6] id="([^"]+)"', article(page)))
    assert len(anchors) >= 2, f"{slug}: table of contents is empty"
    assert set(anchors) <= ids, f"{slug}: TOC links {set(anchors) - ids} lead nowhere"


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_family_page_lists_exactly_its_cases(built_site: BuiltSite, family: str) -> None:
    expected = {c.slug for c in built_site.cases if c.family == family}
    assert linked_cases(built_site, f"families/{family.lower()}/") == expected


@pytest.mark.parametrize("template", TEMPLATE_IDS)
def test_template_page_lists_exactly_the_cases_that_print_it(built_site: BuiltSite, template: str) -> None:
    expected = {c.slug for c in built_site.cases if template in c.templates}
    assert linked_cases(built_site, f"messages/{template.lower()}/") == expected


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_family_page_teaches_its_general_fixes_with_pytorchs_documentation(built_site: BuiltSite, family: str) -> None:
    from samedevice import fixes

    content = _content(built_site, f"families/{family.lower()}/")
    recipes = fixes.for_family(family)
    assert recipes
    assert content.index('id="how-to-fix-it"') < content.index('id="cases"')
    for r in recipes:
        assert f'id="{r.id}"' in content, r.id
        for d in r.docs:
            assert f'href="{d.url}"' in content, (r.id, d.url)


@pytest.mark.parametrize("template", TEMPLATE_IDS)
def test_template_page_says_what_to_do_first_and_how_to_fix_it(built_site: BuiltSite, template: str) -> None:
    from samedevice import fixes

    content = _content(built_site, f"messages/{template.lower()}/")
    assert 'id="what-to-do-first"' in content
    own = [r for r in fixes.recipes() if r.template == template]
    for r in own:  # a recipe whose failing program prints this message is on its page
        assert f'id="{r.id}"' in content, r.id
    assert 'id="how-to-fix-it"' in content
    assert "docs.pytorch.org/docs/stable/" in content or "pytorch.org/get-started" in content


def test_cases_index_and_home_list_every_case(built_site: BuiltSite) -> None:
    every = {c.slug for c in built_site.cases}
    assert linked_cases(built_site, "cases/") == every
    assert linked_cases(built_site, "") >= every
    assert "samedevice:case-table" not in built_site.page("").read_text(encoding="utf-8")


def test_verification_page_shows_each_record(built_site: BuiltSite) -> None:
    text = squash(visible_text(_content(built_site, "verification/")))
    assert linked_cases(built_site, "verification/") == {c.slug for c in built_site.cases}
    for case in built_site.cases:
        assert case.id in text
        for record in case.records():
            row = squash(f"{case.id} {plain(case.title)} {record['date']} {record['torch']}")
            assert row in text, f"verification page lacks {row!r}"
