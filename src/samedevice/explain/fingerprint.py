"""A documented project's own code, recognised in a paste by its identifiers.

Real reports of a documented bug often hold neither the whole traceback nor the library's
path: a traceback cut above the failing frame (``train_classifier_simple`` ->
``calc_loss_batch``), a message prefixed by the function that raised it (``extract_diff:
Expected all tensors ...``), a reporter's prose naming the file, the function and the variables
(``finetune.py ... train_ram_plus ... image_tag``). The case's own files already hold those
names: the code its page quotes in backticks, its library's files, its program. A case's
fingerprint is that set of identifiers, each weighted by how few cases share it; names every
PyTorch project uses (PyTorch's own API, and names pasted in reports of many unrelated
repositories: ``data/common_identifiers.json``, made by ``benchmarks/common_identifiers.py``)
are left out. Nothing here is a rule per case: a new case's files give its fingerprint.

The browser runs the same match on the same fingerprints (docs/javascripts/explain.js).
"""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path

COMMON = Path(__file__).resolve().parent.parent / "data" / "common_identifiers.json"

# ASCII identifiers, as in Python source (the browser uses the same class)
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TICKED = re.compile(r"`([^`\n]+)`")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
MIN_LENGTH = 5  # shorter names (`x_t`, `lora`) are shared by too many projects to tell them apart
# the lines of a paste read for identifiers: the top (title, prose) and the error's region
HEAD_LINES = 60


def distinctive(token: str) -> bool:
    """A name shaped like code a project chose: snake_case or camelCase, not a plain word."""
    if len(token) < MIN_LENGTH:
        return False
    core = token.strip("_")
    return "_" in core or bool(_CAMEL.search(token)) or (token.startswith("_") and len(core) >= MIN_LENGTH)


def words(text: str) -> set[str]:
    """Every token of ``text`` of at least MIN_LENGTH characters, lower-cased."""
    return {t.lower() for t in _TOKEN.findall(text) if len(t) >= MIN_LENGTH}


def identifiers(text: str) -> set[str]:
    """The distinctive identifiers of ``text``, lower-cased."""
    return {t.lower() for t in _TOKEN.findall(text) if distinctive(t)}


@cache
def common() -> frozenset[str]:
    try:
        return frozenset(json.loads(COMMON.read_text(encoding="utf-8"))["identifiers"])
    except (OSError, ValueError, KeyError):
        return frozenset()


def case_names(case) -> tuple[set[str], set[str]]:
    """The identifiers a case's files hold (code quoted in its prose, its library's files, the
    names its failing program defines), and its project's and package's own names."""
    out: set[str] = set()
    prose = [case.title, case.summary, case.why, case.fix, case.find, case.versions.notes]
    prose += [link.title for link in (*case.upstream.issue, *case.upstream.fix, *case.upstream.introduced)]
    for text in prose:
        for span in _TICKED.findall(text or ""):
            out |= identifiers(span)
    for frame in case.library_frames:
        for part in re.split(r"[/\\.]", frame):
            if distinctive(part):
                out.add(part.lower())
    # a project's own name is often a plain word (lightly, LyCORIS): kept when it is one word,
    # not the parts of a longer one (LLMs-from-scratch is not "scratch")
    project = case.upstream.project.split("/")[-1] if case.upstream.project else ""
    names = {n.lower() for n in (project, case.versions.package)
             if n and _TOKEN.fullmatch(n) and len(n) >= MIN_LENGTH}
    out |= _program_names(case.broken_path)
    return out - names, names


def _program_names(path: Path) -> set[str]:
    """Functions, classes and ``self.`` attributes the case's failing program defines."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = node.name
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            name = node.attr
        else:
            continue
        if distinctive(name) and not name.startswith("__"):
            out.add(name.lower())
    return out


# a project's plain name weighs this much: many reports name a library they merely use
PROJECT_WEIGHT = 0.5


def fingerprints(cases: list) -> dict[str, dict[str, float]]:
    """slug -> {identifier: weight}: 1 / the number of cases holding it (a project's own name:
    PROJECT_WEIGHT of that); common names left out."""
    shared = common()
    code: dict[str, set[str]] = {}
    own: dict[str, set[str]] = {}
    for c in cases:
        found, names = case_names(c)
        code[c.slug], own[c.slug] = found - shared, names - shared
    df: dict[str, int] = {}
    for slug in code:
        for name in code[slug] | own[slug]:
            df[name] = df.get(name, 0) + 1
    out = {}
    for slug in code:
        weights = {n: 1.0 / df[n] for n in code[slug]}
        weights.update({n: PROJECT_WEIGHT / df[n] for n in own[slug]})
        out[slug] = {n: round(w, 4) for n, w in sorted(weights.items())}
    return out


def paste_tokens(lines: list[str], region_lo: int, region_hi: int, errors: list[dict]) -> tuple[dict[str, int], set[str]]:
    """The tokens a fingerprint is compared with, each with the first paste line (1-based)
    holding it, and those that prefix an error message (``extract_diff: Expected all ...``: the
    function that raised it). Read: the paste's first lines and the region around the error
    (bounded, so a 60 MB log costs no more than a short paste), the messages themselves left
    out (their op and wrapper names are the signature's business)."""
    blank: dict[int, str] = {}
    prefixes: set[str] = set()
    for e in errors:
        for first, last, lead in e["spans"]:
            for i in range(first, last + 1):
                blank[i] = lead if i == first else ""
            m = _PREFIX.search(lead)
            if m:
                prefixes.add(m.group(1).lower())
    head = range(min(HEAD_LINES, len(lines)))
    region = range(max(region_lo, HEAD_LINES), min(region_hi, len(lines)))
    out: dict[str, int] = {}
    for rows in (head, region):
        for i in rows:
            for token in _TOKEN.findall(blank.get(i, lines[i])):
                if len(token) >= MIN_LENGTH:
                    out.setdefault(token.lower(), i + 1)
    return out, {p for p in prefixes if p in out}


# the name right before a message: "extract_diff: Expected ..." / "in extract_diff(): ..."
_PREFIX = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\W{0,4}$")


def matches(tokens: dict[str, int], prefixes: set[str], kb: dict) -> list[tuple[dict, list[str], float, int]]:
    """(case, the identifiers found, their summed weight, the first line holding one) for each
    case whose fingerprint the paste reaches, strongest first. One name alone is a coincidence
    (``attention_mask``, ``load_model``): it takes two of the case's names, or the name of the
    function that raised the message (which counts twice), and ``scoring.fingerprint_min``."""
    least = kb["scoring"]["fingerprint_min"]
    out = []
    for case in kb["cases"]:
        found = sorted(n for n in case["fingerprint"] if n in tokens)
        if not found or (len(found) < 2 and found[0] not in prefixes):
            continue
        score = 0.0  # summed in name order, as the browser does
        for n in found:
            score += case["fingerprint"][n] * (2 if n in prefixes else 1)
        if score >= least:
            out.append((case, found, score, min(tokens[n] for n in found)))
    out.sort(key=lambda m: -m[2])
    return out
