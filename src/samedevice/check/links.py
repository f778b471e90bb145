"""The one place that turns a rule or a family into a URL of the samedevice site.

The base is ``$SAMEDEVICE_DOCS_URL`` when set (the integrator can point every link of the
checker at another deployment here), else ``$SAMEDEVICE_SITE_URL`` (what ``audit`` reads), else
the published site.
"""

from __future__ import annotations

import os

DEFAULT_DOCS_URL = "https://samedevice.github.io/samedevice/"


def docs_url(page: str = "") -> str:
    """``docs_url("families/f2/")`` -> ``https://.../families/f2/``."""
    base = (os.environ.get("SAMEDEVICE_DOCS_URL") or os.environ.get("SAMEDEVICE_SITE_URL")
            or DEFAULT_DOCS_URL).strip()
    if not base.endswith("/"):
        base += "/"
    return base + page


def family_url(family: str) -> str:
    return docs_url(f"families/{family.lower()}/")


def rule_url(code: str) -> str:
    return docs_url(f"rules/#{code.lower()}")
