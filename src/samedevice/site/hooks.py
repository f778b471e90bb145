"""MkDocs hooks of the samedevice site; ``mkdocs.yml`` loads this file under ``hooks:``.

MkDocs loads a hook file by path, not as ``samedevice.site.hooks``: keep it free of relative
imports and of state other modules import. The work is done in the sibling modules.

Build order (MkDocs 1.6 / ProperDocs):

``on_config``        read the registry; expand the ``Cases`` nav entry.
``on_files``         add the case notebooks (before mkdocs-jupyter wraps them), their programs
                     and the generated pages.
``on_page_markdown`` page meta of case pages from notebook metadata; the home-page case table.
``on_page_content``  shrink mkdocs-jupyter's HTML, rebuild the TOC (before search indexes it).
``on_post_page``     the Content-Security-Policy and referrer ``<meta>`` first in each page (csp.py;
                     under ``mkdocs serve`` inline scripts are allowed, for its live reload).
``on_post_build``    case fields into the search index (search_fields.py); the explain
                     engine's browser assets; the page-weight check.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import get_toc

from samedevice.cases import Case, CaseError
from samedevice.site import (
    case_pages,
    checks,
    csp,
    generated,
    navigation,
    notebook_html,
    search_fields,
    sitedata,
)

log = logging.getLogger("mkdocs.plugins.samedevice")

HOME_PAGE = "index.md"
HOME_TABLE_MARKER = "<!-- samedevice:case-table -->"
# Tables of the simulated CUDA machine, generated from samedevice.sim._machine's registry.
MACHINE_MARKERS = {"<!-- samedevice:cuda-calls -->": "table", "<!-- samedevice:simulated-gpu -->": "properties_table"}
_EXPLAIN_BROWSER = {"samedevice.explain", "samedevice.explain.browser"}


class _Build:
    """What one build knows; reset by ``on_config`` (``mkdocs serve`` rebuilds in-process)."""

    data: sitedata.SiteData
    case_by_uri: dict[str, Case]
    notebook_meta: dict[str, dict[str, Any]]


_build = _Build()


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    # mkdocs-jupyter logs one INFO line per notebook copied ("Copied jupyter file: ..."): a
    # screenful on every build and `make serve` rebuild. Its warnings still show.
    logging.getLogger("mkdocs.plugins.mkdocs_jupyter").setLevel(logging.WARNING)
    root = Path(config.config_file_path).parent
    try:
        _build.data = sitedata.load_site_data(root)
        config.nav = navigation.expand_nav(config.nav, _build.data)
    except (CaseError, navigation.NavError) as e:
        raise PluginError(f"samedevice: {e}") from None
    _build.case_by_uri = {generated.case_uri(c): c for c in _build.data.cases}
    _build.notebook_meta = {}
    return config


# Before mkdocs-jupyter's on_files (priority 0), which turns the notebooks into pages.
@event_priority(50)
def on_files(files: Files, config: MkDocsConfig) -> Files:
    data = _build.data
    for case in data.cases:
        try:
            for f in case_pages.case_files(config, case):
                files.append(f)
        except case_pages.MissingNotebook as e:
            raise PluginError(f"samedevice: {e}") from None
    known = {f.src_uri for f in files} | set(generated.page_uris())
    try:
        messages = sitedata.load_messages_page(
            data, generated.link_maker(generated.MESSAGES_INDEX, known))
    except ValueError as e:
        raise PluginError(f"samedevice: Error messages page: {e}") from None
    for uri, markdown in generated.virtual_pages(data, messages).items():
        if files.get_file_from_path(uri) is not None:
            raise PluginError(f"samedevice: docs/{uri} exists, but the site generates that page; "
                              "remove the file")
        files.append(File.generated(config, uri, content=markdown))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    uri = page.file.src_uri
    case = _build.case_by_uri.get(uri)
    if case is not None:
        try:
            meta = case_pages.notebook_metadata(case.notebook_path)
        except ValueError as e:
            raise PluginError(f"samedevice: {e}") from None
        if meta["slug"] != case.slug:
            raise PluginError(f"samedevice: cases/{case.slug}.ipynb says it is {meta['slug']!r}; "
                              "regenerate it with `samedevice notebook`")
        _build.notebook_meta[uri] = meta
        page.meta.update(case_pages.page_meta(meta))
    elif uri == HOME_PAGE and HOME_TABLE_MARKER in markdown:
        table = generated.case_table(_build.data, _build.data.cases, HOME_PAGE,
                                     columns=("id", "case", "family", "messages"))
        markdown = markdown.replace(HOME_TABLE_MARKER, table)
    if generated.LIBRARIES_MARKER in markdown:
        root = Path(config.config_file_path).parent
        markdown = markdown.replace(generated.LIBRARIES_MARKER, generated.real_libraries_table(root))
    for marker, name in MACHINE_MARKERS.items():
        if marker in markdown:
            from samedevice.sim import _machine  # imports torch: only for the page that shows it

            markdown = markdown.replace(marker, getattr(_machine, name)())
    return markdown


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    meta = _build.notebook_meta.get(page.file.src_uri)
    if meta is None:
        return html
    clean = notebook_html.clean_notebook_html(html)
    page.toc = get_toc(clean.toc_tokens)
    page.present_anchor_ids = clean.anchor_ids  # lets MkDocs validate links to #sections
    # mkdocs-jupyter titles the page from a Markdown export that drops inline code.
    page.title = generated.plain(str(meta.get("title") or clean.title or page.title))
    return clean.html


# `mkdocs serve` adds a live-reload script to every page it serves (csp.policy's `preview`)
_serving = False


def on_startup(command: str, dirty: bool) -> None:
    global _serving
    _serving = command == "serve"


# Last, after every other plugin has changed the page: the policy hashes its final inline scripts.
@event_priority(-100)
def on_post_page(output: str, page: Page, config: MkDocsConfig) -> str:
    return csp.add_policies(output, preview=_serving)


@event_priority(-100)
def on_post_template(output_content: str, template_name: str, config: MkDocsConfig) -> str:
    return csp.add_policies(output_content, preview=_serving)  # 404.html: a template, not a page


# After Material's search plugin (priority 0) has written search/search_index.json.
@event_priority(-50)
def on_post_build(config: MkDocsConfig) -> None:
    site_dir = Path(config.site_dir)
    index = site_dir / "search" / "search_index.json"
    try:
        search_fields.add_case_fields(index, _build.data.cases)
    except (OSError, ValueError) as e:
        raise PluginError(f"samedevice: search index: {e}") from None
    try:
        from samedevice.explain.browser import write_assets
    except ModuleNotFoundError as e:
        if e.name not in _EXPLAIN_BROWSER:
            raise
        log.info("samedevice: samedevice.explain.browser not available; no paste-box assets")
    else:
        write_assets(site_dir, root=_build.data.root)  # this build's cases, not the install's
    for path, size in checks.oversized_pages(site_dir):
        log.warning("samedevice: %s is %d bytes, over the %d-byte page limit",
                    path, size, checks.PAGE_LIMIT_BYTES)
