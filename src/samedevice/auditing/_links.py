"""Links to the family pages of the samedevice site.

The site lays family pages out as ``families/<id lowercase>/``. The base URL is
``samedevice.docs_url``'s: the published site unless ``$SAMEDEVICE_DOCS_URL`` points at
another (a local ``make serve``, or ``../../`` inside the case pages).
"""

from __future__ import annotations

from functools import cache

from samedevice.docs_url import docs_url as site_url  # noqa: F401  (re-exported by auditing)
from samedevice.docs_url import page_url


def family_url(family: str) -> str:
    """``family_url("F2")`` -> ``https://samedevice.github.io/samedevice/families/f2/``."""
    return page_url(f"families/{family.lower()}/")


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
