"""Rule and family URLs for the checker's output, built on the package's one link base
(:mod:`samedevice.docs_url`: the published site, or ``$SAMEDEVICE_DOCS_URL`` / ``--docs-url``)."""

from __future__ import annotations

from samedevice.docs_url import page_url


def docs_url(page: str = "") -> str:
    """``docs_url("families/f2/")`` -> ``https://.../families/f2/``."""
    return page_url(page)


def family_url(family: str) -> str:
    return page_url(f"families/{family.lower()}/")


def rule_url(code: str) -> str:
    return page_url(f"rules/#{code.lower()}")
