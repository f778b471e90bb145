"""The site's Content-Security-Policy and referrer policy, written into every page's HTML.

GitHub Pages sends neither header, so both travel as ``<meta>`` elements, first in ``<head>``:
a policy applies only to what comes after it, and the referrer policy must hold before the first
request (a paste in an old ``?q=`` link must never leave as a Referer).

The policy allows the site's own files and nothing else: scripts and styles from its origin, and
each inline ``<script>``/``<style>`` the page itself carries (Material's bootstrap, the paste
page's fragment guard, a notebook page's colour rules) by the SHA-256 of its exact text, so a
script injected later matches no hash and does not run. ``frame-ancestors`` and ``report-uri``
are ignored in a ``<meta>`` policy and left out.
"""

from __future__ import annotations

import base64
import hashlib
import re

# inline elements whose text the browser hashes: everything between the tags, byte for byte
_INLINE = re.compile(r"<(script|style)\b([^>]*)>(.*?)</\1\s*>", re.S | re.I)
_EXECUTABLE_TYPES = ("", "text/javascript", "module", "application/javascript")
_HEAD = re.compile(r"<head\b[^>]*>", re.I)
REFERRER = '<meta name="referrer" content="no-referrer">'


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def _script_type(attrs: str) -> str:
    m = re.search(r"""\btype\s*=\s*["']?([^"'\s>]+)""", attrs, re.I)
    return m.group(1).lower() if m else ""


def policy(html: str, preview: bool = False) -> str:
    """The policy for one page: its origin's files, and its own inline scripts and styles.
    ``preview`` (``mkdocs serve``): any inline script, since the live-reload script the server
    adds to each response changes with every request and cannot be hashed at build time."""
    scripts, styles = [], []
    for m in _INLINE.finditer(html):
        tag, attrs, body = m.group(1).lower(), m.group(2), m.group(3)
        if tag == "script":
            # a data block (Material's type="application/json" config) is never run: no hash
            if re.search(r"\bsrc\s*=", attrs, re.I) or _script_type(attrs) not in _EXECUTABLE_TYPES:
                continue
            scripts.append(_sha256(body))
        else:
            styles.append(_sha256(body))
    unique = lambda xs: " ".join(dict.fromkeys(xs))  # noqa: E731  (keeps the page's order)
    return "; ".join(part for part in (
        "default-src 'none'",
        # 'report-sample': a violation report quotes the start of what was blocked
        "script-src 'self' 'unsafe-inline'" if preview else f"script-src 'self' 'report-sample' {unique(scripts)}".strip(),
        f"style-src 'self' 'report-sample' {unique(styles)}".strip(),
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",  # explain.js and the search worker read the site's own JSON
        "worker-src 'self'",
        "manifest-src 'self'",
        "base-uri 'self'",
        "form-action 'self'",
    ))


def add_policies(html: str, preview: bool = False) -> str:
    """``html`` with the CSP and referrer ``<meta>`` elements first in its ``<head>`` (a page
    without one, such as a redirect stub, is returned as it is)."""
    head = _HEAD.search(html)
    if head is None:
        return html
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy(html, preview)}">{REFERRER}'
    return html[:head.end()] + meta + html[head.end():]
