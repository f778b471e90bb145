"""The built site as a whole: strict build, page weight, nothing fetched from other hosts."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from samedevice.docs_url import DEFAULT_DOCS_URL
from samedevice.site import checks
from tests.site.sitebuild import BuiltSite, article

# Outbound links a page may carry besides the case sources' hosts (from the registry).
OUTBOUND_HOSTS = {"github.com", "pytorch.org", "docs.pytorch.org", "discuss.pytorch.org", "pypi.org",
                  "pre-commit.com"}

NAV_TITLES = ["Home", "Paste your error", "Cases", "By family", "By message", "Error messages",
              "How CPU verification works", "Add a case", "Verification"]


def test_strict_build_passes_without_warnings(built_site: BuiltSite) -> None:
    assert built_site.returncode == 0
    assert not re.search(r"^WARNING", built_site.log, re.MULTILINE), built_site.log


def test_every_page_within_300_kb(built_site: BuiltSite) -> None:
    pages = list(checks.html_pages(built_site.site))
    assert len(pages) >= len(built_site.cases) + 10 + 13  # cases, families, templates at least
    sizes = {str(p.relative_to(built_site.site)): p.stat().st_size for p in pages}
    print("largest pages:", sorted(sizes.items(), key=lambda kv: -kv[1])[:5])
    assert checks.oversized_pages(built_site.site) == []


def test_case_pages_carry_no_inline_styles_or_scripts(built_site: BuiltSite) -> None:
    """mkdocs-jupyter's ~600 KB of JupyterLab CSS and its clipboard script are gone; the one
    style block left is the traceback colours' classes (notebook_html._colour_classes)."""
    for case in built_site.cases:
        html = built_site.page(case.page_url).read_text(encoding="utf-8")
        styles = re.findall(r"<style>(.*?)</style>", html, re.S)
        assert html.count("<style") == len(styles) <= 1, case.slug
        assert all(re.fullmatch(r"(\.sd-fg-[0-9a-f]{6}\{color:rgb\(\d+,\d+,\d+\)\})+", s) for s in styles), case.slug
        content = article(html)
        assert "<script" not in content, case.slug
        assert "jp-OutputArea" in content, f"{case.slug}: no notebook output rendered"


def test_nothing_loaded_from_other_hosts(built_site: BuiltSite) -> None:
    from samedevice.site.sitedata import load_site_data

    allowed = OUTBOUND_HOSTS | load_site_data(built_site.root).outbound_hosts
    assert checks.external_references(built_site.site, allowed, own_url=DEFAULT_DOCS_URL) == []


def test_no_broken_local_links(built_site: BuiltSite) -> None:
    assert checks.broken_local_links(built_site.site, mount=urlsplit(DEFAULT_DOCS_URL).path) == []


def test_nav_has_every_section(built_site: BuiltSite) -> None:
    html = built_site.page("").read_text(encoding="utf-8")
    nav = html[html.index('<nav class="md-nav md-nav--primary"'):]
    labels = [" ".join(m.split()) for m in re.findall(r'<span class="md-ellipsis">\s*(.*?)\s*</span>', nav, re.S)]
    for title in NAV_TITLES:
        assert title in labels, f"nav lacks {title!r}: {labels}"
    positions = [labels.index(t) for t in ["Home", "Paste your error", "Cases", "Error messages",
                                           "How CPU verification works", "Add a case", "Verification"]]
    assert positions == sorted(positions)
