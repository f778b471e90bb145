"""Two search fields on each case page's main entry, so a pasted error finds its case first.

Material ranks with lunr: title weighs 1000, text 1, and every query word matches as a prefix
(``same`` matches the title word ``samedevice``). Pasted messages share most of their words
(``expected``, ``tensors``, ``device``, ``cpu``...) and case titles contain some of them, so left
alone, the page whose *title* happens to say "device" and "CPU" wins, not the page whose error
names ``addmm`` and ``mat1``. The page text does hold the messages, but in the "Error" section's
entry, which weighs 1 and gets none of the bonus Material gives a page's main entry.

So, declared with their boosts in ``mkdocs.yml`` (``plugins.search.fields``) and written from
the registry into the main entry of every case page:

``signature``  the op, the argument and the devices of the case's ``[error]`` table, and the
               long words of its message that no other message holds (``distinct_words``). An op or
               argument token is left out when a word the messages share is a prefix of it or
               equals it (a word of another case's messages: a word only the case's own message
               says is a paste of that case): ``in`` ("in method") would otherwise hit ``index``
               and ``input``, ``to``
               would hit ``torch``, ``for`` would hit ``forward`` -- in every paste (docs-stack
               §4). Device tokens (``cuda``, ``0``, ``cpu``) follow the same rule: they stay
               while no message word is one of them, and lift case pages above the index pages;
               ``cuda`` goes once a message says it as a word ("Tensors must be CUDA and dense").
``messages``   every word of every message era, once each: the words that set a message apart
               (``backend``, ``associated``, ``different``) count; repeating a word per era
               would favour cases with more eras.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from samedevice.cases import Case

SIGNATURE = "signature"
MESSAGES = "messages"


def tokenize(text: str, separator: str) -> list[str]:
    """Words as lunr indexes them with Material's tokenizer: lowercased, split on ``separator``."""
    return [t for t in re.split(separator, text.lower()) if t]


def _names(case: Case, separator: str) -> set[str]:
    return {t for part in (case.error.op, case.error.argument) for t in tokenize(part, separator)}


def _devices(case: Case, separator: str) -> set[str]:
    return {t for d in case.error.devices for t in tokenize(d, separator)}


def message_words(case: Case, separator: str) -> list[str]:
    texts = [f"{case.error.exception}: {m.text}" for m in case.error.messages]
    return list(dict.fromkeys(t for text in texts for t in tokenize(text, separator)))


def shared_words(cases: Iterable[Case], separator: str) -> set[str]:
    """Words of the messages that are not a case's own op, argument or devices."""
    words: set[str] = set()
    for case in cases:
        own = _names(case, separator) | _devices(case, separator)
        words |= set(message_words(case, separator)) - own
    return words


# A distinctive message word is this long at least: shorter words ("have", "data", "this")
# are everyday English that a paste's prose or code would hit.
DISTINCT_MIN = 6


def distinct_words(cases: Iterable[Case], separator: str) -> dict[str, set[str]]:
    """Per case slug: the words of its messages' first lines (the error's own sentence) that no
    other case's messages hold and that no other message word is a prefix of, at least
    ``DISTINCT_MIN`` letters. The RNN check says "parameter", Dynamo's "mismatch": the words
    that set a paste apart when the op's name is not in it."""
    cases = list(cases)
    words = {c.slug: set(message_words(c, separator)) for c in cases}
    out: dict[str, set[str]] = {}
    for case in cases:
        others = set().union(*(w for s, w in words.items() if s != case.slug))
        first = {t for m in case.error.messages for t in tokenize(m.text.split("\n", 1)[0], separator)}
        out[case.slug] = {t for t in first if len(t) >= DISTINCT_MIN and t.isalpha()
                          and not any(t.startswith(o) for o in others)}
    return out


def signature(case: Case, shared: set[str], separator: str, distinct: Iterable[str] = ()) -> list[str]:
    def safe(token: str) -> bool:
        return not any(token.startswith(w) for w in shared)

    # a device token that is also a plain word of some message ("Tensors must be CUDA and
    # dense") would lift every case on that device for such a paste: only safe ones stay
    own = {t for t in _names(case, separator) | _devices(case, separator) if safe(t)}
    return sorted(own | set(distinct))


def add_case_fields(index_path: Path, cases: Iterable[Case]) -> dict[str, dict[str, str]]:
    """Write both fields into each case page's main entry of ``search_index.json``."""
    cases = list(cases)
    data = json.loads(index_path.read_text(encoding="utf-8"))
    separator = data["config"]["separator"]
    missing = [f for f in (SIGNATURE, MESSAGES) if f not in data["config"]["fields"]]
    if missing:
        raise ValueError(f"mkdocs.yml must declare plugins.search.fields.{missing[0]} with its boost")
    distinct = distinct_words(cases, separator)
    by_location = {e["location"]: e for e in data["docs"]}
    written = {}
    for case in cases:
        entry = by_location.get(case.page_url)
        if entry is None:
            raise ValueError(f"the search index has no entry for {case.page_url}")
        # the words *other* cases' messages share: a word only this case's own message says
        # ("mask" in masked_fill's check) is the paste that should find it, so the op token it
        # prefixes ("masked") stays
        shared = shared_words((c for c in cases if c is not case), separator)
        entry[SIGNATURE] = " ".join(signature(case, shared, separator, distinct[case.slug]))
        entry[MESSAGES] = " ".join(message_words(case, separator))
        written[case.slug] = {SIGNATURE: entry[SIGNATURE], MESSAGES: entry[MESSAGES]}
    index_path.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    return written
