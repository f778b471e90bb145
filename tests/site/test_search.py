"""The search index, and pasted errors replayed through Material's own search worker.

The replay runs ``search_harness.js`` under Node: Material's unchanged lunr worker answering
queries against the built ``search/search_index.json``, as in a browser.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from samedevice.site import search_fields
from tests.site.sitebuild import BuiltSite

HARNESS = Path(__file__).with_name("search_harness.js")
NOISE = ("Copied!", "raises-exception", "remove-cell", "In [", "Out[", "¶", "celltoolbar")


def _index(built: BuiltSite) -> dict:
    return json.loads((built.site / "search" / "search_index.json").read_text(encoding="utf-8"))


def _plain(text: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def test_index_holds_every_message_of_every_case(built_site: BuiltSite) -> None:
    docs = _index(built_site)["docs"]
    for case in built_site.cases:
        text = " ".join(_plain(d["text"]) for d in docs if d["location"].startswith(case.page_url))
        for m in case.error.messages:
            assert " ".join(m.text.split()) in text, f"{case.slug}: torch {m.torch} message not indexed"


def test_index_has_no_notebook_noise(built_site: BuiltSite) -> None:
    for doc in _index(built_site)["docs"]:
        for noise in NOISE:
            assert noise not in doc["title"], f"{doc['location']}: {noise!r} in title"
            if doc["location"].startswith("cases/"):
                assert noise not in doc["text"], f"{doc['location']}: {noise!r} in text"


def test_case_entries_carry_signature_and_message_words(built_site: BuiltSite) -> None:
    index = _index(built_site)
    assert {search_fields.SIGNATURE, search_fields.MESSAGES} <= set(index["config"]["fields"])
    by_location = {d["location"]: d for d in index["docs"]}
    sep = index["config"]["separator"]
    shared = search_fields.shared_words(built_site.cases, sep)
    distinct = search_fields.distinct_words(built_site.cases, sep)
    for case in built_site.cases:
        entry = by_location[case.page_url]
        assert set(entry[search_fields.MESSAGES].split()) == set(search_fields.message_words(case, sep))
        others = search_fields.shared_words((c for c in built_site.cases if c is not case), sep)
        assert entry[search_fields.SIGNATURE].split() == search_fields.signature(
            case, others, sep, distinct[case.slug])
        # a device word some message says as a plain word ("CUDA and dense") is left out
        assert "cuda" in shared and "cuda" not in entry[search_fields.SIGNATURE].split()


# -- replaying pasted errors -------------------------------------------------------------------


def _queries(built: BuiltSite) -> list[tuple[str, str, str]]:
    """(slug, era, query): each message as printed, and with the exception name as pasted."""
    out = []
    for case in built.cases:
        for m in case.error.messages:
            out.append((case.slug, m.torch, m.text))
            out.append((case.slug, m.torch, f"{case.error.exception}: {m.text}"))
    return out


@pytest.fixture(scope="module")
def replayed(built_site: BuiltSite) -> list[tuple[str, str, str, list[str]]]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the search replay needs Node (apt-get install nodejs)")
    queries = _queries(built_site)
    proc = subprocess.run([node, str(HARNESS), str(built_site.site)],
                          input=json.dumps([q for _, _, q in queries]),
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    return [(*q, r) for q, r in zip(queries, results, strict=True)]


_DEVICE_WORD = re.compile(r"^(cpu|cuda|mps|xpu|npu|meta|\d+)$")
# Exception class names: RuntimeError and its subclasses (Dynamo's TorchRuntimeError, whose
# message quotes the eager T1 text word for word) are one word apart, which no search weighs.
_EXCEPTION_WORD = re.compile(r"^\w*(error|exception)$")


def _covering(built: BuiltSite, query: str, sep: str) -> set[str]:
    """Cases whose messages contain every word of the query, device words aside: search cannot
    tell them apart. (A T1 paste `cuda:0 and cpu!` and a T12 message `cuda:1 and cuda:0!` differ
    only in device words, which the case pages repeat in their prose; lunr's term frequencies
    then decide, not the words a user could act on. Likewise the exception's class name.)"""
    words = {w for w in search_fields.tokenize(query, sep)
             if not _DEVICE_WORD.match(w) and not _EXCEPTION_WORD.match(w)}
    return {c.slug for c in built.cases if words <= set(search_fields.message_words(c, sep))}


def test_pasted_message_ranks_its_case_first(built_site: BuiltSite, replayed) -> None:
    """The case ranks first, except behind cases whose messages hold every word of the paste
    too (a bag-of-words search cannot separate those); the rank table prints either way."""
    sep = _index(built_site)["config"]["separator"]
    table, problems = [], []
    for slug, era, query, pages in replayed:
        want = f"cases/{slug}/"
        rank = pages.index(want) + 1 if want in pages else None
        ties = _covering(built_site, query, sep) - {slug}
        table.append(f"{rank!s:>4}  {slug}  torch {era}  ({len(ties)} cases share its words)  {query[:60]}")
        above = [p for p in pages[: (rank or len(pages) + 1) - 1]]
        strangers = [p for p in above if p.removeprefix("cases/").rstrip("/") not in ties]
        if rank is None or strangers:
            problems.append(f"{slug} torch {era}: rank {rank}, above it {strangers[:3]}: {query[:80]}")
    print("\n".join(["search ranks (rank, case, era, query):", *table]))
    assert not problems, "\n".join([*problems, "", *table])
