"""A ``signature`` search field on each case page, so a pasted error finds its case first.

Material ranks with lunr: the title field weighs 1000, text 1, and every query word matches as a
prefix (``same`` matches the title word ``samedevice``). Pasted messages share most of their
words (``expected``, ``tensors``, ``device``, ``cpu``...), and case titles contain some of them, so
without help the page whose *title* happens to say "device" and "CPU" wins, not the page whose
error names ``addmm`` and ``mat1``. The fix: index what tells cases apart -- the op, the argument
and the device pair from the case's ``[error]`` table -- in a field of its own, declared with
its boost in ``mkdocs.yml`` (``plugins.search.fields.signature``), on the page's main entry.

An op or argument token is left out when a word the messages share is a prefix of it or equals
it: ``in`` ("in method") would otherwise hit ``index`` and ``input``, ``to`` would hit ``torch``,
``for`` would hit ``forward`` -- for every paste (docs-stack §4). Device tokens (``cuda``, ``0``,
``cpu``) stay: no message word is a prefix of them, and they rank case pages above the indexes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from samedevice.cases import Case

FIELD = "signature"


def tokenize(text: str, separator: str) -> list[str]:
    """Words as lunr indexes them with Material's tokenizer: lowercased, split on ``separator``."""
    return [t for t in re.split(separator, text.lower()) if t]


def _names(case: Case, separator: str) -> set[str]:
    return {t for part in (case.error.op, case.error.argument) for t in tokenize(part, separator)}


def _devices(case: Case, separator: str) -> set[str]:
    return {t for d in case.error.devices for t in tokenize(d, separator)}


def _own_tokens(case: Case, separator: str) -> set[str]:
    return _names(case, separator) | _devices(case, separator)


def shared_words(cases: Iterable[Case], separator: str) -> set[str]:
    """Words of the messages that are not a case's own op, argument or devices."""
    words: set[str] = set()
    for case in cases:
        own = _own_tokens(case, separator)
        for m in case.error.messages:
            words |= set(tokenize(f"{case.error.exception}: {m.text}", separator)) - own
    return words


def signature(case: Case, shared: set[str], separator: str) -> list[str]:
    def safe(token: str) -> bool:
        return not any(token.startswith(w) for w in shared)

    return sorted({t for t in _names(case, separator) if safe(t)} | _devices(case, separator))


def add_signatures(index_path: Path, cases: Iterable[Case]) -> dict[str, list[str]]:
    """Write each case's signature into its page's main entry of ``search_index.json``."""
    cases = list(cases)
    data = json.loads(index_path.read_text(encoding="utf-8"))
    separator = data["config"]["separator"]
    if FIELD not in data["config"]["fields"]:
        raise ValueError(f"mkdocs.yml must declare plugins.search.fields.{FIELD} (with its boost)")
    shared = shared_words(cases, separator)
    by_location = {e["location"]: e for e in data["docs"]}
    written = {}
    for case in cases:
        entry = by_location.get(case.page_url)
        if entry is None:
            raise ValueError(f"the search index has no entry for {case.page_url}")
        written[case.slug] = signature(case, shared, separator)
        entry[FIELD] = " ".join(written[case.slug])
    index_path.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    return written
