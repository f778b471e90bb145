"""The registry as the site sees it: cases, root-cause families and message templates.

Templates (T1-T13) come from ``samedevice.explain.catalogue.load_templates()`` when that
module exists; until it does, the site still builds every template page, with ids only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from samedevice import cases as registry
from samedevice.cases import FAMILY_IDS, TEMPLATE_IDS, Case

log = logging.getLogger("mkdocs.plugins.samedevice")

# The explain package is written alongside the site (issue 4); only its absence is tolerated.
_EXPLAIN_MODULES = {"samedevice.explain", "samedevice.explain.catalogue"}


@dataclass(frozen=True)
class Template:
    """One message template. Only ``id`` is known when the catalogue is absent."""

    id: str
    title: str = ""
    text: str = ""  # the shape of the message
    meaning: str = ""  # Markdown: what the message tells the reader
    families: tuple[str, ...] = ()  # the families that produce it, most likely first
    next_step: str = ""  # Markdown: what to do first

    @property
    def heading(self) -> str:
        return f"{self.id} {self.title}".strip()


@dataclass(frozen=True)
class Family:
    id: str
    slug: str
    title: str
    summary: str

    @property
    def heading(self) -> str:
        return f"{self.id} {self.title}"


@dataclass(frozen=True)
class SiteData:
    root: Path
    cases: tuple[Case, ...]
    families: Mapping[str, Family]
    templates: Mapping[str, Template]
    catalogue_available: bool

    def cases_in_family(self, family_id: str) -> list[Case]:
        return [c for c in self.cases if c.family == family_id]

    def cases_with_template(self, template_id: str) -> list[Case]:
        """Cases that can produce the template; those whose documented error is it come first."""
        found = [c for c in self.cases if template_id in c.templates]
        return sorted(found, key=lambda c: (c.error.template != template_id, c.id))

    @cached_property
    def outbound_hosts(self) -> frozenset[str]:
        """Hosts the case pages link to (upstream issues and fixes): allowed outbound links."""
        from urllib.parse import urlsplit

        hosts = set()
        for c in self.cases:
            up = c.upstream
            for link in (*up.issue, *up.fix, *up.introduced, *up.evidence):
                hosts.add(urlsplit(link.url).hostname or "")
        hosts.discard("")
        return frozenset(hosts)


def load_families() -> dict[str, Family]:
    raw = registry.families()
    missing = [f for f in FAMILY_IDS if f not in raw]
    if missing:
        raise registry.CaseError(f"families.toml lacks {', '.join(missing)}")
    return {
        fid: Family(id=fid, slug=str(raw[fid]["slug"]), title=str(raw[fid]["title"]),
                    summary=str(raw[fid]["summary"]))
        for fid in FAMILY_IDS
    }


def _field(item: Any, *names: str) -> str:
    """First present field of a catalogue entry, read as a mapping key or an attribute."""
    for name in names:
        value = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
        if value:
            return str(value)
    return ""


def templates_from_catalogue(raw: Any) -> dict[str, Template]:
    """Normalise ``load_templates()``: a mapping ``id -> entry`` or a list of entries with ``id``.

    An entry gives its name as ``title`` (or ``name``), the shape of the message as ``shape``
    (or ``text``) and optionally ``meaning``; other fields are the catalogue's business.
    """
    entries = raw.items() if isinstance(raw, Mapping) else ((_field(e, "id"), e) for e in raw)
    found = {
        str(tid): Template(id=str(tid), title=_field(e, "title", "name"),
                           text=_field(e, "shape", "text"), meaning=_field(e, "meaning"),
                           families=tuple(e.get("families", ()) if isinstance(e, Mapping) else ()),
                           next_step=_field(e, "next_step"))
        for tid, e in entries
    }
    unknown = sorted(set(found) - set(TEMPLATE_IDS))
    if unknown:
        raise ValueError(f"the message catalogue has templates outside T1-T13: {unknown}")
    return {tid: found.get(tid, Template(id=tid)) for tid in TEMPLATE_IDS}


def load_templates() -> tuple[dict[str, Template], bool]:
    """(templates by id, whether they came from the explain catalogue)."""
    try:
        from samedevice.explain.catalogue import load_templates as catalogue_templates
    except ModuleNotFoundError as e:
        if e.name not in _EXPLAIN_MODULES:
            raise
        log.info("samedevice: no message catalogue yet (%s); template pages show ids only", e.name)
        return {tid: Template(id=tid) for tid in TEMPLATE_IDS}, False
    return templates_from_catalogue(catalogue_templates()), True


def load_messages_page(data: SiteData, url_for: Callable[[str], str]) -> str | None:
    """Markdown of the "Error messages" page from the explain catalogue; None while it is absent.

    ``url_for`` turns the site URLs the renderer links to into source links MkDocs validates;
    the cases are this build's, not those of whatever checkout the package was installed from.
    """
    try:
        from samedevice.explain.catalogue import render_messages_page
        from samedevice.explain.knowledge import case_entries, family_entries
    except ModuleNotFoundError as e:
        if e.name not in _EXPLAIN_MODULES | {"samedevice.explain.knowledge"}:
            raise
        return None
    return render_messages_page(url_for=url_for, cases=case_entries(data.root),
                                families=family_entries())


def load_site_data(root: Path) -> SiteData:
    # `mkdocs serve` rebuilds in the same process: re-read the case files every build.
    registry.reload()
    templates, from_catalogue = load_templates()
    return SiteData(
        root=root,
        cases=registry.load_cases(root),
        families=load_families(),
        templates=templates,
        catalogue_available=from_catalogue,
    )
