"""The case files a wheel carries, and where an installed package finds them.

A checkout keeps each case once, in ``cases/`` and ``snippets/``. Building the wheel copies the
files the CLI reads (listed in ``CONTENTS``) into the package, under ``BUNDLE_DIR``, laid out
as in the checkout; ``setup.py`` does the copy and reads both names from this file, so the
layout is written down once. Nothing under ``BUNDLE_DIR`` is committed.

os.path only: ``samedevice explain`` imports this on its fast path.
"""

from __future__ import annotations

import os

BUNDLE_DIR = "_bundled"
# folder of the checkout -> glob patterns (relative to it) of the files the wheel carries.
# Notebooks stay out: the site renders them; the CLI never reads them.
CONTENTS: dict[str, tuple[str, ...]] = {
    "cases": ("*.toml", "*.verified.json", "*.upstream.json"),
    "snippets": ("*/*",),
}


def bundled_root() -> str | None:
    """The copy of ``cases/`` and ``snippets/`` inside an installed package, if it has one."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), BUNDLE_DIR)
    if os.path.isdir(os.path.join(path, "cases")) and os.path.isdir(os.path.join(path, "snippets")):
        return path
    return None
