"""Fixtures for tests that open the built site in headless Chromium (Debian's chromium, driven by
Playwright), served over HTTP on 127.0.0.1.

The fixtures ``site`` and ``browser`` live in ``tests/conftest.py``; a test module that uses them
sets ``pytestmark = BROWSER`` so it is skipped where Chromium or Playwright is missing, and serves
the site with ``serve``.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
BROWSER = [
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None,
                       reason="playwright is not installed (pip install playwright)"),
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (apt-get install chromium)"),
]


def serve(root: Path) -> Iterator[str]:
    """Serve ``root`` on a free port of 127.0.0.1 until the generator is closed; yields its URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
