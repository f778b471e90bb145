"""Shrink and clean the HTML mkdocs-jupyter makes of a notebook.

mkdocs-jupyter 0.26 inlines ~600 KB of JupyterLab CSS and a clipboard script into every
notebook page, shows cell tags as labels ("raises-exception") and keeps a hidden copy of each
cell's source for its copy button. All of that is page weight and search-index noise. This
module removes it and reshapes the cells so that Material's own styles and copy button apply:

- ``<style>``, ``<script>`` and comments go; ``docs/stylesheets/notebook.css`` styles the cells.
- A traceback's ANSI colours become classes defined in one ``<style>`` block (the site's CSP runs
  no ``style`` attribute).
- Markdown cells dissolve into the page, so search sections hold the code cells that follow
  their heading.
- Plain-text blocks (the error messages) get class ``sd-wrap`` and wrap instead of scrolling.
- Code inputs become ``div.highlight > pre > code`` (Material's syntax colours for light and dark
  schemes, and its copy button).
- Cell-tag labels, the clipboard widget and its hidden source copy go.
- ``id="cell-id=..."`` goes: Material derives the copy button's CSS selector from the nearest
  ancestor id, and ``=`` makes that selector invalid.
- A traceback shows the program's own frames and the error (PyTorch's frames are counted, not
  printed); the whole traceback, as produced, is folded below it (``<details>``).
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


# A frame of IPython's traceback starts with one of these lines; a blank line ends it.
_FRAME_START = re.compile(r"^(Cell In\[\d+\], line \d+|File .+:\d+(, in .*)?)$")
# PyTorch's own frames (and the standard library's): shown folded, counted in the short view
_TORCH_FRAME = re.compile(r"^File .*/(site|dist)-packages/torch/")
_LIBRARY_FRAME = re.compile(r"^File .*(/(site|dist)-packages/torch/|/lib/python3\.\d+/(?!site-packages/|dist-packages/))")


def _left_out(frames: list[str]) -> str:
    where = "PyTorch" if all(_TORCH_FRAME.match(f) for f in frames) else "PyTorch and Python"
    n = len(frames)
    return f"... {n} frame{'s' * (n > 1)} inside {where} (in the full traceback below)"


def short_traceback(text: str) -> tuple[str, int] | None:
    """The traceback ``text`` (IPython's, as a page's failing cell printed it) with PyTorch's own
    frames left out and counted in their place, and how many frames were left out; None when
    the text is no traceback or nothing would be left out."""
    lines = text.split("\n")
    if not any("Traceback (most recent call last)" in line for line in lines[:3]):
        return None
    out: list[str] = []
    dropped = 0
    run: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FRAME_START.match(line):
            end = i
            while end < len(lines) and lines[end].strip():
                end += 1
            if _LIBRARY_FRAME.match(line):
                dropped += 1
                run.append(line)
            else:
                if run:
                    out += [_left_out(run), ""]
                    run = []
                out += [*lines[i:end], ""]
            i = end + 1
            continue
        if run:
            out += [_left_out(run), ""]
            run = []
        out.append(line)
        i += 1
    if not dropped:
        return None
    return "\n".join(out).rstrip("\n") + "\n", dropped


_ANSI_COLOUR = re.compile(r"\s*color:\s*rgb\((\d{1,3}),\s*(\d{1,3}),\s*(\d{1,3})\);?\s*")


def _colour_classes(soup: BeautifulSoup) -> None:
    """nbconvert writes a traceback's 256-colour ANSI codes as ``style="color: rgb(...)"``. The
    site's Content-Security-Policy (csp.py) runs no style attribute, so each colour becomes a
    class, defined once in a ``<style>`` block at the top of the page (which the policy hashes)."""
    colours: dict[str, str] = {}
    for tag in soup.find_all(style=True):
        m = _ANSI_COLOUR.fullmatch(tag["style"])
        if m is None:
            continue
        rgb = tuple(min(int(x), 255) for x in m.groups())
        name = "sd-fg-" + "".join(f"{x:02x}" for x in rgb)
        colours[name] = "rgb({},{},{})".format(*rgb)
        del tag["style"]
        tag["class"] = [*tag.get("class", []), name]
    if colours:
        rules = "".join(f".{name}{{color:{value}}}" for name, value in sorted(colours.items()))
        style = soup.new_tag("style")
        style.string = rules
        soup.insert(0, style)


def _fold_tracebacks(soup: BeautifulSoup) -> None:
    for pre in soup.select('div.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"] > pre'):
        short = short_traceback(pre.get_text().strip("\n"))
        if short is None:
            continue
        text, dropped = short
        brief = soup.new_tag("pre", attrs={"class": "sd-short-traceback"})
        brief.string = text
        fold = soup.new_tag("details", attrs={"class": "sd-full-traceback"})
        summary = soup.new_tag("summary")
        summary.string = f"Full traceback (with the {dropped} frame{'s' * (dropped > 1)} left out above)"
        fold.append(summary)
        pre.insert_before(brief)
        fold.append(pre.extract())
        brief.insert_after(fold)


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
    _fold_tracebacks(soup)
    _colour_classes(soup)
    title, toc, ids = _headings(soup)
    # Leading whitespace would open an untitled section before the h1 in Material's search.
    return CleanNotebook(html=str(soup).strip(), title=title, toc_tokens=toc, anchor_ids=ids)
