"""Shrink and clean the HTML mkdocs-jupyter makes of a notebook.

mkdocs-jupyter 0.26 inlines ~600 KB of JupyterLab CSS and a clipboard script into every
notebook page, shows cell tags as labels ("raises-exception") and keeps a hidden copy of each
cell's source for its copy button. All of that is page weight and search-index noise. This
module removes it and reshapes the cells so that Material's own styles and copy button apply:

- ``<style>``, ``<script>`` and comments go; ``docs/stylesheets/notebook.css`` styles the cells.
- Markdown cells dissolve into the page, so search sections hold the code cells that follow
  their heading.
- Plain-text blocks (the error messages) get class ``sd-wrap`` and wrap instead of scrolling.
- Code inputs become ``div.highlight > pre > code`` (Material's syntax colours for light and dark
  schemes, and its copy button).
- Cell-tag labels, the clipboard widget and its hidden source copy go.
- ``id="cell-id=..."`` goes: Material derives the copy button's CSS selector from the nearest
  ancestor id, and ``=`` makes that selector invalid.
- Headings get MkDocs-style ids and ``headerlink`` permalinks (Material's search ignores those);
  the page's table of contents is rebuilt from them, because mkdocs-jupyter builds it from a
  Markdown export whose ids do not match the HTML.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

from bs4 import BeautifulSoup, Comment, Tag
from markdown.extensions.toc import slugify, unique

# Raw-text elements end at the first closing tag (HTML spec), so a regex cuts them exactly; doing
# it before parsing spares BeautifulSoup the ~600 KB of CSS (0.5 s a page otherwise).
_RAW_TEXT = re.compile(r"<(style|script)\b[^>]*>.*?</\1\s*>", re.S | re.I)
_NOISE_CLASSES = ("celltoolbar", "zeroclipboard-container", "clipboard-copy-txt", "jp-Collapser")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


@dataclass
class CleanNotebook:
    html: str
    title: str | None
    toc_tokens: list[dict[str, Any]] = field(default_factory=list)
    anchor_ids: set[str] = field(default_factory=set)


def _has_class(tag: Tag, name: str) -> bool:
    return name in (tag.get("class") or [])


def _drop_noise(soup: BeautifulSoup) -> None:
    for tag in soup.find_all(["style", "script"]):
        tag.decompose()
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    for name in _NOISE_CLASSES:
        for tag in soup.find_all(class_=name):
            tag.decompose()


def _flatten(soup: BeautifulSoup) -> None:
    """Markdown cells and notebook wrappers dissolve into the page; code cells stay blocks.

    Material's search splits a page into sections at headings, and a section ends where the
    element holding its heading ends. Inside per-cell wrappers every section would end with its
    markdown cell, and the code cells and tracebacks after it would land in the page's preface.
    """
    for cell in soup.find_all("div", class_="jp-MarkdownCell"):
        rendered = cell.find("div", class_="jp-RenderedMarkdown")
        if rendered is None:
            continue
        cell.replace_with(*rendered.extract().contents)
    for name in ("jupyter-wrapper", "jp-Notebook"):
        for wrapper in soup.find_all("div", class_=name):
            wrapper.unwrap()


def _unwrap_double_cells(soup: BeautifulSoup) -> None:
    """mkdocs-jupyter's template wraps each code cell in a second, identical cell div."""
    for outer in soup.find_all("div", class_="jp-CodeCell"):
        children = [c for c in outer.children if isinstance(c, Tag)]
        if len(children) == 1 and _has_class(children[0], "jp-CodeCell"):
            outer.unwrap()


def _reshape_cells(soup: BeautifulSoup) -> None:
    for tag in soup.find_all(id=True):
        if str(tag["id"]).startswith("cell-id="):
            del tag["id"]
    for tag in soup.find_all(class_="jp-Cell-inputWrapper"):
        tag.attrs.pop("tabindex", None)  # one keyboard stop per cell helps nobody
    for div in soup.find_all("div", class_="highlight-ipynb"):
        div["class"] = ["highlight"]
    for pre in soup.select("div.highlight > pre"):
        if pre.find("code", recursive=False) is None:
            code = soup.new_tag("code")
            for child in list(pre.contents):
                code.append(child.extract())
            pre.append(code)
        # Plain-text blocks (no highlighted tokens) hold error messages: wrap them so the whole
        # message is readable; program code keeps its lines and scrolls.
        if not any(span.get("class") for span in pre.find_all("span")):
            pre.parent["class"] = [*pre.parent.get("class", []), "sd-wrap"]


def _toc_tree(flat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nest (level, id, name) tokens the way Python-Markdown's toc extension does."""
    root: list[dict[str, Any]] = []
    stack: list[dict[str, Any]] = []
    for token in flat:
        while stack and stack[-1]["level"] >= token["level"]:
            stack.pop()
        (stack[-1]["children"] if stack else root).append(token)
        stack.append(token)
    return root


def _headings(soup: BeautifulSoup) -> tuple[str | None, list[dict[str, Any]], set[str]]:
    used: set[str] = set()
    flat: list[dict[str, Any]] = []
    title = None
    for h in soup.find_all(_HEADINGS):
        for a in h.find_all("a", class_="anchor-link"):
            a.decompose()
        text = " ".join(h.get_text().split())
        slug = unique(slugify(text, "-") or "section", used)
        h["id"] = slug
        link = soup.new_tag("a", attrs={"class": "headerlink", "href": f"#{slug}",
                                        "title": "Permanent link"})
        link.string = "¶"
        h.append(link)
        if title is None and h.name == "h1":
            title = text
        flat.append({"level": int(h.name[1]), "id": slug, "name": html.escape(text),
                     "children": []})
    return title, _toc_tree(flat), used


def _drop_empty_table_headers(soup: BeautifulSoup) -> None:
    """A Markdown table must have a header row; key/value tables (the page's "Affected
    versions": Package, Affected, Fixed) write an empty one, which would show as a blank bar."""
    for thead in soup.find_all("thead"):
        if not thead.get_text(strip=True):
            thead.decompose()


def clean_notebook_html(raw: str) -> CleanNotebook:
    soup = BeautifulSoup(_RAW_TEXT.sub("", raw), "html.parser")
    _drop_noise(soup)
    _drop_empty_table_headers(soup)
    _flatten(soup)
    _unwrap_double_cells(soup)
    _reshape_cells(soup)
    title, toc, ids = _headings(soup)
    # Leading whitespace would open an untitled section before the h1 in Material's search.
    return CleanNotebook(html=str(soup).strip(), title=title, toc_tokens=toc, anchor_ids=ids)
