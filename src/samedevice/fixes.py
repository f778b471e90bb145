"""The general fixes: one recipe per way of putting a tensor where its neighbours are.

The recipes live in ``data/fixes.toml`` (validated by ``data/fixes.schema.json``). The family
and message pages of the site show them; ``tests/sim/test_fix_recipes.py`` runs each recipe's
``before`` (which must fail with its template) and ``after`` (which must run) on the simulated
accelerator. Reads data only: no torch.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA = Path(__file__).parent / "data"
FIXES = DATA / "fixes.toml"
SCHEMA = DATA / "fixes.schema.json"


class FixesError(ValueError):
    """data/fixes.toml is malformed: the message names the field."""


@dataclass(frozen=True)
class DocLink:
    title: str
    url: str


@dataclass(frozen=True)
class Recipe:
    id: str
    title: str
    families: tuple[str, ...]
    template: str  # what `before` prints
    text: str
    before: str
    after: str
    docs: tuple[DocLink, ...]
    needs_cuda: bool  # False: `before` fails on a machine without a GPU, no simulator needed


def _problems(data: dict) -> list[str]:
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    lines = []
    for e in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        lines.append(f"{FIXES.name}: {where}: {e.schema.get('description') or e.message}")
    return lines


@cache
def recipes() -> tuple[Recipe, ...]:
    """Every recipe, in the file's order (by family)."""
    try:
        data = tomllib.loads(FIXES.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise FixesError(f"{FIXES.name}: cannot be read: {exc}") from None
    problems = _problems(data)
    docs = data.get("docs", {})
    seen: set[str] = set()
    for r in data.get("recipe", []):
        if r.get("id") in seen:
            problems.append(f"{FIXES.name}: recipe {r['id']}: the id is used twice")
        seen.add(r.get("id"))
        problems += [f"{FIXES.name}: recipe {r.get('id')}: docs: no [docs] entry {key!r}"
                     for key in r.get("docs", []) if key not in docs]
    if problems:
        raise FixesError("\n".join(problems))
    return tuple(
        Recipe(id=r["id"], title=r["title"], families=tuple(r["families"]), template=r["template"],
               text=" ".join(r["text"].split()), before=r["before"].strip("\n") + "\n",
               after=r["after"].strip("\n") + "\n",
               docs=tuple(DocLink(**docs[k]) for k in r["docs"]), needs_cuda=r.get("needs_cuda", True))
        for r in data["recipe"]
    )


def for_family(family_id: str) -> list[Recipe]:
    return [r for r in recipes() if family_id in r.families]


def for_template(template_id: str, likely_families: tuple[str, ...] = ()) -> list[Recipe]:
    """The recipes whose failing program prints ``template_id``, then those of the families that
    most often produce it (the catalogue's order), each once."""
    found = [r for r in recipes() if r.template == template_id]
    for fid in likely_families:
        found += [r for r in for_family(fid) if r not in found]
    return found
