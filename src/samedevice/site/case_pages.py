"""The files behind a case page and the page meta taken from its notebook.

A case page is ``cases/<slug>.ipynb`` at the top of the checkout (next to the case's toml, not
in ``docs/``); the site serves it at ``cases/<slug>/`` with the case's programs beside it
(``broken.py``, ``fixed.py``) and, through mkdocs-jupyter's ``include_source``, the notebook.

mkdocs-jupyter reads no front matter from notebooks (its issue #84), so title, description and
the search-relevant facts come from the notebook's ``metadata.samedevice`` instead.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File

from samedevice.cases import Case

from .generated import case_uri, plain


class MissingNotebook(FileNotFoundError):
    """A registered case has no page; the message says how to make it."""


def case_files(config: MkDocsConfig, case: Case) -> list[File]:
    """The notebook page and the two programs, as files of the site."""
    if not case.notebook_path.is_file():
        raise MissingNotebook(
            f"{case.slug}: cases/{case.slug}.ipynb is missing; generate it with "
            f"`samedevice notebook {case.slug}` (or `make notebooks`)"
        )
    # A plain File rooted at the checkout, not File.generated: mkdocs-jupyter wraps the file in
    # a proxy whose abs_src_path is recomputed from src_dir, which File.generated leaves None.
    files = [File(case_uri(case), src_dir=str(case.root), dest_dir=config.site_dir,
                  use_directory_urls=config.use_directory_urls)]
    for program in (case.broken_path, case.fixed_path):
        files.append(File.generated(config, f"cases/{case.slug}/{program.name}",
                                    abs_src_path=str(program)))
    return files


def notebook_metadata(path: Path) -> dict[str, Any]:
    """``metadata.samedevice`` of a case notebook (the generator writes it from the toml)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    meta = nb.get("metadata", {}).get("samedevice")
    if not isinstance(meta, dict) or not meta.get("slug"):
        raise ValueError(f"{path}: no metadata.samedevice.slug; regenerate it with `samedevice notebook`")
    return meta


def message_texts(meta: dict[str, Any]) -> list[str]:
    """Every era's message text; entries are ``{"torch", "text"}`` tables or plain strings."""
    texts = []
    for m in meta.get("messages", []):
        texts.append(m["text"] if isinstance(m, dict) else str(m))
    return texts


def page_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Page meta for a case page.

    No ``tags``: Material boosts tags a million-fold and matches them by prefix, so a tag like
    ``SD-0002`` (tokens ``sd``, ``0002``) outranks everything for any query holding ``cuda:0``
    (docs-stack §4). The id, family and templates are in the page text instead.
    """
    return {
        # Material writes page.meta.description into an attribute without escaping it.
        "description": html.escape(plain(str(meta.get("summary", ""))), quote=True),
        "samedevice": {
            "slug": meta["slug"],
            "id": meta.get("id", ""),
            "family": meta.get("family", ""),
            "templates": list(meta.get("templates", [])),
            "messages": message_texts(meta),
        },
    }
