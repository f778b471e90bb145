"""The one base every link samedevice prints is built from: the published site by default.

``DEFAULT_DOCS_URL`` is the site's public address (GitHub Pages; ``site_url`` in mkdocs.yml
is the same address, a test keeps them equal). ``$SAMEDEVICE_DOCS_URL`` points the links
elsewhere, e.g. at a local ``make serve`` (``http://127.0.0.1:8000/samedevice/``) or, for the case
notebooks, at the site itself (``../../``); every ``samedevice`` command takes
``--docs-url URL``, which sets it for the command and the programs it runs.

Plain ``os`` only: ``samedevice explain`` reads this on its fast path.
"""

from __future__ import annotations

import os

DEFAULT_DOCS_URL = "https://samedevice.github.io/samedevice/"
ENV = "SAMEDEVICE_DOCS_URL"
_OLD_ENV = "SAMEDEVICE_SITE_URL"  # the earlier name, still honoured


def docs_url() -> str:
    """The base URL, always ending in ``/`` (read from the environment on each call)."""
    base = (os.environ.get(ENV, "").strip() or os.environ.get(_OLD_ENV, "").strip()
            or DEFAULT_DOCS_URL)
    return base if base.endswith("/") else base + "/"


def page_url(path: str) -> str:
    """``page_url("families/f2/")`` -> ``https://samedevice.github.io/samedevice/families/f2/``."""
    return docs_url() + path.lstrip("/")
