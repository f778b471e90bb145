"""The ``Cases`` part of the navigation, computed from the registry.

``mkdocs.yml`` keeps the hand-written order of the site and a single ``Cases: cases/index.md``
entry; this module replaces that entry with the tree below, so a new case appears in the nav
without an edit to ``mkdocs.yml``::

    Cases                          (cases/index.md, the table of all cases)
      By family                    (families/index.md)
        F1 Moved, then modified    (families/f1/index.md)
          <case title>             (cases/<slug>.ipynb)
      By message
        T1 ...                     (messages/t1/index.md)

With Material's ``navigation.indexes`` the first ``index.md`` of a section is its own page.
"""

from __future__ import annotations

from typing import Any

from samedevice.cases import FAMILY_IDS, TEMPLATE_IDS

from . import generated
from .sitedata import SiteData

NavItem = str | dict[str, Any]


class NavError(ValueError):
    """mkdocs.yml's nav has no ``cases/index.md`` entry to expand."""


def cases_section(data: SiteData) -> list[NavItem]:
    by_family: list[NavItem] = [generated.FAMILIES_INDEX]
    for fid in FAMILY_IDS:
        children: list[NavItem] = [generated.family_uri(fid)]
        children += [{generated.plain(c.title): generated.case_uri(c)}
                     for c in data.cases_in_family(fid)]
        by_family.append({data.families[fid].heading: children})
    by_message: list[NavItem] = [
        {generated.plain(data.templates[t].heading): generated.template_uri(t)} for t in TEMPLATE_IDS
    ]
    return [generated.CASES_INDEX, {"By family": by_family}, {"By message": by_message}]


def expand_nav(nav: list[NavItem] | None, data: SiteData) -> list[NavItem]:
    """``nav`` with its ``cases/index.md`` entry replaced by the generated ``Cases`` section."""
    if not nav:
        raise NavError("mkdocs.yml needs a nav with a 'Cases: cases/index.md' entry")
    expanded: list[NavItem] = []
    found = False
    for item in nav:
        target = item if isinstance(item, str) else next(iter(item.values()), None)
        if target == generated.CASES_INDEX:
            title = "Cases" if isinstance(item, str) else next(iter(item))
            expanded.append({title: cases_section(data)})
            found = True
        else:
            expanded.append(item)
    if not found:
        raise NavError(f"mkdocs.yml's nav has no top-level '{generated.CASES_INDEX}' entry to expand")
    return expanded
