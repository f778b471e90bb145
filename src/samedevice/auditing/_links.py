"""Links to the family pages of the samedevice site.

The site lays family pages out as ``families/<id lowercase>/``. The base URL comes from
``SAMEDEVICE_SITE_URL`` so that a report printed in CI, on the published site or next to
``make serve`` (the default, ``http://127.0.0.1:8000/``) points at pages that exist there.
"""

from __future__ import annotations

import os
from functools import cache

DEFAULT_SITE_URL = "http://127.0.0.1:8000/"


def site_url() -> str:
    """The site's base URL, always ending in ``/`` (read from the environment on each call)."""
    base = os.environ.get("SAMEDEVICE_SITE_URL", "").strip() or DEFAULT_SITE_URL
    return base if base.endswith("/") else base + "/"


def family_url(family: str) -> str:
    """``family_url("F2")`` -> ``http://127.0.0.1:8000/families/f2/``."""
    return f"{site_url()}families/{family.lower()}/"


@cache
def _families() -> dict[str, dict]:
    from samedevice.cases import families

    return families()


def family_title(family: str) -> str:
    """The family's title from ``data/families.toml`` (``"Unregistered state"`` for F2)."""
    return str(_families().get(family, {}).get("title", family))


def family_line(family: str) -> str:
    """One legend line: ``F2 Unregistered state: http://.../families/f2/``."""
    return f"{family} {family_title(family)}: {family_url(family)}"
