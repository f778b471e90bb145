"""Helpers of the site tests: the one real build, and reading its pages."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from samedevice.cases import Case, load_cases

BUILD_TIMEOUT_S = 600


@dataclass(frozen=True)
class BuiltSite:
    root: Path  # the checkout that was built
    site: Path  # the built site
    returncode: int
    log: str
    seconds: float

    @property
    def cases(self) -> tuple[Case, ...]:
        return load_cases(self.root)

    def page(self, url: str) -> Path:
        """The HTML file served at a site URL like ``cases/<slug>/``."""
        return self.site / url / "index.html" if url.endswith("/") or not url else self.site / url


def build(root: Path, out: Path) -> BuiltSite:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
         "-d", str(out)],
        cwd=root, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
    )
    return BuiltSite(root=root, site=out, returncode=proc.returncode,
                     log=proc.stdout + proc.stderr, seconds=time.perf_counter() - start)


class _Text(HTMLParser):
    """Visible text of a page (no script/style), for "does the reader see X" checks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def visible_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


def article(html: str) -> str:
    """The page's own content (Material's <article>), without nav, header and footer."""
    start = html.index("<article")
    return html[start:html.index("</article>", start)]


def squash(text: str) -> str:
    return " ".join(text.split())
