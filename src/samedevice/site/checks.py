"""Checks on the built site: page weight, references to other hosts, broken local links.

The build runs ``oversized_pages`` (a warning fails ``mkdocs build --strict``); the tests run
all three. The site must work offline: nothing it loads may come from another host, and the
only links to other hosts are outbound ``<a href>`` links to allowed hosts.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

PAGE_LIMIT_BYTES = 300_000

# Attributes through which a browser fetches (or navigates to) something.
_URL_ATTRS = {"src", "href", "srcset", "data", "action", "poster", "formaction", "background"}
_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""")


def html_pages(site_dir: Path) -> Iterator[Path]:
    yield from sorted(site_dir.rglob("*.html"))


def oversized_pages(site_dir: Path, limit: int = PAGE_LIMIT_BYTES) -> list[tuple[str, int]]:
    return [(str(p.relative_to(site_dir)), size) for p in html_pages(site_dir)
            if (size := p.stat().st_size) > limit]


def _is_remote(url: str) -> bool:
    url = url.strip().lower()
    return url.startswith(("http://", "https://", "//", "ftp://", "ws://", "wss://"))


def _srcset_urls(value: str) -> list[str]:
    return [part.strip().split()[0] for part in value.split(",") if part.strip()]


class _References(HTMLParser):
    """Collects (tag, attribute, url) for every URL-carrying attribute and inline CSS url()."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str, str]] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in _URL_ATTRS:
                urls = _srcset_urls(value) if name == "srcset" else [value]
                self.refs += [(tag, name, u) for u in urls]
            elif name == "style":
                self.refs += [(tag, "style", u) for u in css_urls(value)]
            elif tag == "meta" and name == "content" and "url=" in value.lower():
                self.refs.append((tag, "content", value.lower().split("url=", 1)[1]))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.refs += [("style", "url()", u) for u in css_urls(data)]


def css_urls(css: str) -> list[str]:
    return [a or b for a, b in _CSS_URL.findall(css)]


def references(page: Path) -> list[tuple[str, str, str]]:
    parser = _References()
    parser.feed(page.read_text(encoding="utf-8"))
    parser.close()
    return parser.refs


def external_references(site_dir: Path, allowed_link_hosts: frozenset[str] | set[str],
                        own_url: str | None = None) -> list[str]:
    """Every reference to another host except ``<a href>`` links to an allowed host.

    ``own_url`` is the site's published address (``site_url``): the canonical ``<link>`` each
    page carries points there, which is the site itself, not another host."""
    problems = []
    for page in html_pages(site_dir):
        rel = page.relative_to(site_dir)
        for tag, attr, url in references(page):
            if not _is_remote(url):
                continue
            if own_url and tag == "link" and url.startswith(own_url):
                continue
            host = urlsplit(url if "://" in url else "https:" + url).hostname or ""
            if tag == "a" and attr == "href" and host in allowed_link_hosts:
                continue
            problems.append(f"{rel}: <{tag} {attr}={url!r}>")
    for css in sorted(site_dir.rglob("*.css")):
        for url in css_urls(css.read_text(encoding="utf-8")):
            if _is_remote(url):
                problems.append(f"{css.relative_to(site_dir)}: url({url!r})")
    return problems


def _local_target(site_dir: Path, page: Path, url: str, mount: str = "/") -> Path | None:
    """The file a relative URL on ``page`` points to (None for anchors, data: and mail links).

    ``mount`` is the path the site is published under (``/samedevice/`` for site_url
    ``https://samedevice.github.io/samedevice/``): the 404 page's links start with it."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    url_path = unquote(parts.path)
    if url_path.startswith("/") and mount != "/" and (url_path + "/").startswith(mount):
        url_path = "/" + url_path[len(mount):]
    base = "/" if url_path.startswith("/") else "/" + str(page.parent.relative_to(site_dir))
    path = posixpath.normpath(posixpath.join(base, url_path)).lstrip("/")
    target = site_dir / path
    if parts.path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target


def broken_local_links(site_dir: Path, mount: str = "/") -> list[str]:
    """Relative links and asset references that point at nothing in the built site (published
    under the path ``mount``)."""
    problems = []
    for page in html_pages(site_dir):
        rel = page.relative_to(site_dir)
        for tag, attr, url in references(page):
            if _is_remote(url) or attr == "content":
                continue
            target = _local_target(site_dir, page, url, mount)
            if target is not None and not target.is_file():
                problems.append(f"{rel}: <{tag} {attr}={url!r}> -> {target.relative_to(site_dir)} missing")
    return problems
