"""The message catalogue (data/templates.toml) as plain data, and the generated "Error messages" page.

``load_templates()`` is the one reader of the catalogue: the explain engine, the browser data
(samedevice.explain.browser) and the site's "Error messages" page all go through it. It returns
plain dicts and lists (JSON-ready), with every form regex already expanded into the shared
dialect (samedevice.explain.dialect) and every link name resolved to ``{title, url}``.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

from samedevice.explain.dialect import expand

CATALOGUE = Path(__file__).resolve().parent.parent / "data" / "templates.toml"
TEMPLATE_IDS = tuple(f"T{i}" for i in range(1, 14))


@cache
def _raw() -> dict:
    return tomllib.loads(CATALOGUE.read_text(encoding="utf-8"))


def macros() -> dict[str, str]:
    """The ``{NAME}`` macros of the shared regex dialect ({DEV}, {KEY})."""
    return dict(_raw()["syntax"])


def load_templates() -> dict[str, dict]:
    """Templates T1..T13 in order, each a plain dict (see data/templates.toml for the fields)."""
    raw = _raw()
    links = raw.get("links", {})
    syntax = raw["syntax"]
    out: dict[str, dict] = {}
    for tid in TEMPLATE_IDS:
        t = raw[tid]
        forms = []
        for f in t.get("forms", []):
            form = {
                "id": f["id"],
                "template": tid,
                "versions": f["versions"],
                "torch": f.get("torch", ""),
                "example": f["example"],
                "emitted_by": f.get("emitted_by", ""),
                "change": f.get("change", ""),
                "links": [_link(links, name, f["id"]) for name in f.get("links", [])],
                "regex": expand(f["regex"], syntax),  # lower case: run on lower-cased text
                "needles": needles(f["regex"]),
                "needle_sets": needle_sets(expand(f["regex"], syntax)),
                "branches": form_branches(expand(f["regex"], syntax)),
                "devices": list(f.get("devices", [])),
                "common": f.get("common", ""),
                "argdev": f.get("argdev", ""),
                "distinct": bool(f.get("distinct", False)),
                "multi_accel": f.get("multi_accel", ""),
                "partial": bool(f.get("partial", False)),
                "fallback": bool(f.get("fallback", False)),
                "families": list(f.get("families", [])),
                "era_rules": [
                    {
                        "id": r["id"],
                        "field": r["field"],
                        "regex": expand(r["regex"], syntax),
                        "versions": r["versions"],
                        "torch": r.get("torch", ""),
                        "example": r["example"],
                        "change": r.get("change", ""),
                        "links": [_link(links, name, r["id"]) for name in r.get("links", [])],
                    }
                    for r in f.get("era_rules", [])
                ],
            }
            forms.append(form)
        out[tid] = {
            "id": tid,
            "title": t["title"],
            "shape": t["shape"],
            "meaning": " ".join(t["meaning"].split()),
            "exception": t["exception"],
            "families": list(t["families"]),
            "op_families": list(t.get("op_families", [])),
            "next_step": t["next_step"],
            # what tells the template's families apart when the paste holds nothing else
            "decide": " ".join(t["decide"].split()),
            "page": f"messages/{tid.lower()}/",
            "forms": forms,
            "eras": template_eras(t, forms, links),
        }
    return out


_LITERAL_END = re.compile(r"[\\()\[\]{}|?*+.^$]")


def needles(pattern: str) -> list[str]:
    """Words every match contains: the literal text outside groups, classes and quantified
    characters (spaces are flexible, letters are not), so a window lacking one needs no regex at
    all. Taking them from the literal prefix alone left every form that begins with a group
    (``(?P<wrapper>\\w{1,60}) is not compiled with ...``) without any, and those regexes ran
    on every window of a paste: 80 KB of long words took 28 s."""
    runs = _required_literals(pattern)
    if runs is None:
        return []  # 'a|b': neither alternative's words are in every match
    words: list[str] = []
    for run in runs:
        words += [w for w in re.findall(r"[a-z0-9_]+", run.lower()) if len(w) >= 3]
    return list(dict.fromkeys(words))


def _sre():
    try:
        from re import _parser as sre  # the regex module's own parser (3.11+)
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse as sre  # type: ignore[no-redef]
    return sre


def needle_sets(pattern: str, shortest: int = 3, most: int = 4) -> list[list[str]]:
    """Sets of words such that every match of ``pattern`` holds a word of each set: its literal
    runs, and for an alternation one run of every branch (``(?:must|should) be`` gives
    {must, should}); up to ``most`` sets, the longest words first, none with a word shorter than
    ``shortest``. Unlike ``needles`` they see into groups and alternations: a form that is one
    big alternation still has some, and a window that lacks them needs no regex."""
    sre = _sre()
    sets = [s for s in _required_sets(sre.parse(pattern, re.ASCII | re.MULTILINE), sre)
            if min(map(len, s)) >= shortest]
    sets.sort(key=lambda s: (-min(map(len, s)), len(s)))
    return [list(s) for s in dict.fromkeys(tuple(s) for s in sets)][:most]


def _tokens(pattern: str) -> Iterator[tuple[int, str, int, bool]]:
    """``pattern``'s tokens as (offset, token, group depth, inside a class): an escape (``\\x``),
    a counted quantifier or macro outside a class (``{0,80}``, ``{DEV}``), or one character. The one
    scanner of a pattern's structure that ``top_level_branches`` and ``needles`` read."""
    depth, in_class, i = 0, False, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            yield i, pattern[i: i + 2], depth, in_class
            i += 2
            continue
        if in_class:
            yield i, c, depth, True
            # a ] first in the class ([]] or [^]]) is a member, not the end
            in_class = c != "]" or pattern[i - 1] == "[" or pattern[i - 2: i] == "[^"
            i += 1
            continue
        if c == "{":
            close = pattern.find("}", i)
            end = close + 1 if close > 0 else len(pattern)
            yield i, pattern[i:end], depth, False
            i = end
            continue
        if c == ")":
            depth -= 1
        yield i, c, depth, False
        if c == "(":
            depth += 1
        in_class = c == "["
        i += 1


def top_level_branches(pattern: str) -> list[str]:
    """``pattern`` split at each ``|`` outside every group and class: ``a|(b|c)`` gives
    ``["a", "(b|c)"]``; a pattern without one gives ``[pattern]``."""
    cuts = [i for i, token, depth, in_class in _tokens(pattern) if token == "|" and depth == 0 and not in_class]
    bounds = [-1, *cuts, len(pattern)]
    return [pattern[a + 1: b] for a, b in itertools.pairwise(bounds)]


def form_branches(pattern: str) -> list[dict]:
    """A form that is one top-level alternation, branch by branch, each with its own
    ``needle_sets``: a window is searched only with the branches whose words it holds, and the
    leftmost of their matches (the first branch on a tie) is what the whole pattern would find.
    Empty for a pattern without a top-level ``|``."""
    branches = top_level_branches(pattern)
    if len(branches) < 2:
        return []
    return [{"regex": b, "needle_sets": needle_sets(b)} for b in branches]


def anchor_plan(alternatives: list[str], per_alternative: int = 2) -> dict | None:
    """How to find the anchors of a long paste without running their alternation at every
    character. For each alternative: up to ``per_alternative`` of its ``needle_sets`` (words of
    two characters count here: ``vs``); the scan searches the rarest in the paste. ``width`` is
    the longest match any alternative can have: a match lies within that many characters of its
    word, so the alternation needs to run only there. None when some alternative has no set, or
    no bound on its length: then only a full scan is right."""
    sre = _sre()
    plan, width = [], 0
    for alternative in alternatives:
        longest = sre.parse(alternative, re.ASCII | re.MULTILINE).getwidth()[1]
        sets = needle_sets(alternative, shortest=2, most=per_alternative)
        if not sets or longest >= sre.MAXREPEAT:
            return None
        plan.append(sets)
        width = max(width, longest)
    return {"needles": plan, "width": width}


def _required_sets(seq, sre) -> list[list[str]]:
    """Sets of strings, one of each set in every match of the parsed pattern ``seq``: its runs of
    literal characters, and for an alternation the best run of every branch."""
    c = sre  # the opcode names live beside the parser (re._constants)
    sets: list[list[str]] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            sets.append(["".join(run)])
            run.clear()

    for op, av in seq:
        if op is c.LITERAL:
            run.append(chr(av))
            continue
        flush()
        if op is c.SUBPATTERN:
            sets += _required_sets(av[-1], sre)
        elif op is c.BRANCH:
            union: list[str] = []
            for branch in av[1]:
                inner = [s for s in _required_sets(branch, sre) if min(map(len, s)) >= 2]
                if not inner:
                    union = []
                    break
                union += max(inner, key=lambda s: (min(map(len, s)), -len(s)))
            if union:
                sets.append(list(dict.fromkeys(union)))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] >= 1:
            sets += _required_sets(av[2], sre)
    flush()
    return sets


def _required_literals(pattern: str) -> list[str] | None:
    """The runs of literal characters at the top level of ``pattern``; None when the pattern
    has a ``|`` outside every group and class (then no run is in every match)."""
    runs: list[str] = []
    run: list[str] = []

    def end_run() -> None:
        if run:
            runs.append("".join(run))
            run.clear()

    for i, token, depth, in_class in _tokens(pattern):
        quantified = pattern[i + len(token): i + len(token) + 1] in ("?", "*", "+", "{")
        if in_class or token in ("[", "(", ")") or token[0] == "{":
            end_run()  # a class, a group's edge, a counted quantifier or a macro: nothing literal
        elif token[0] == "\\":
            if depth == 0 and not token[1:].isalnum() and len(token) == 2 and not quantified:
                run.append(token[1])  # an escaped literal: \( \. \'
            else:
                end_run()  # \w \d \s \b, or quantified
        elif token == "|" and depth == 0:
            return None
        elif depth == 0 and token not in ".^$?*+}|" and not quantified:
            run.append(token)
        else:
            end_run()
    end_run()
    return runs


def _link(links: dict, name: str, where: str) -> dict:
    if name not in links:
        raise ValueError(f"{CATALOGUE}: form {where} names an unknown link {name!r}")
    return {"title": links[name]["title"], "url": links[name]["url"]}


def template_eras(t: dict, forms: list[dict], links: dict) -> list[dict]:
    """History rows for display: each form (or each era of a form), then display-only eras."""
    rows = []
    for f in forms:
        if f["era_rules"]:
            for r in f["era_rules"]:
                rows.append(
                    {
                        "versions": r["versions"],
                        "example": r["example"],
                        "emitted_by": f["emitted_by"],
                        "change": r["change"],
                        "links": r["links"],
                        "form": f["id"],
                    }
                )
        elif not f["partial"]:
            rows.append(
                {
                    "versions": f["versions"],
                    "example": f["example"],
                    "emitted_by": f["emitted_by"],
                    "change": f["change"],
                    "links": f["links"],
                    "form": f["id"],
                }
            )
    for e in t.get("eras", []):
        rows.append(
            {
                "versions": e["versions"],
                "example": e["example"],
                "emitted_by": e.get("emitted_by", ""),
                "change": e.get("change", ""),
                "links": [_link(links, name, "eras") for name in e.get("links", [])],
                "form": "",
            }
        )
    return rows


# -- the generated "Error messages" page -----------------------------------------------------


def relative_from(page_url: str) -> Callable[[str], str]:
    """A link maker for a page at ``page_url`` (site-relative, e.g. ``messages/``)."""
    depth = len([p for p in page_url.strip("/").split("/") if p])
    prefix = "../" * depth

    def url_for(target: str) -> str:
        return prefix + target

    return url_for


def render_messages_page(
    url_for: Callable[[str], str] | None = None,
    cases: list[dict] | None = None,
    families: dict[str, dict] | None = None,
) -> str:
    """Markdown for the "Error messages" page: every template, its eras with example texts,
    the families (and cases) that produce it, and where each text came from upstream.

    ``url_for`` turns a site-relative URL (``families/f2/``) into a link from the page; the
    default assumes the page is served at ``messages/``. ``cases`` and ``families`` default to
    the case registry and data/families.toml.
    """
    url_for = url_for or relative_from("messages/")
    if families is None or cases is None:
        from samedevice.explain.knowledge import case_entries, family_entries

        families = family_entries() if families is None else families
        cases = case_entries() if cases is None else cases
    templates = load_templates()
    out = [
        "# Error messages",
        "",
        "Every device-error text PyTorch has printed from 1.0 to 2.14, grouped by template.",
        "The same bug prints different texts across releases and op families; each template",
        "below lists its eras, the root-cause families that produce it and the cases that show it.",
        "Paste your own error into [explain](" + url_for("paste/") + ") to get its template and",
        "likely cause, or run `samedevice explain` offline.",
        "",
        "| id | template | families |",
        "|---|---|---|",
    ]
    for tid, t in templates.items():
        fams = ", ".join(_family_link(fid, families, url_for) for fid in t["families"][:4])
        out.append(f"| [{tid}](#{tid.lower()}) | {_cell(t['title'])} | {fams} |")
    out.append("")
    for tid, t in templates.items():
        out += _template_section(tid, t, url_for, cases, families)
    return "\n".join(out).rstrip() + "\n"


def render_template_page(
    tid: str,
    url_for: Callable[[str], str] | None = None,
    cases: list[dict] | None = None,
    families: dict[str, dict] | None = None,
) -> str:
    """Markdown for one template's own page (site URL ``messages/<tid>/``)."""
    url_for = url_for or relative_from(f"messages/{tid.lower()}/")
    if families is None or cases is None:
        from samedevice.explain.knowledge import case_entries, family_entries

        families = family_entries() if families is None else families
        cases = case_entries() if cases is None else cases
    t = load_templates()[tid]
    lines = _template_section(tid, t, url_for, cases, families, level=1)
    return "\n".join(lines).rstrip() + "\n"


def _template_section(tid, t, url_for, cases, families, level: int = 2) -> list[str]:
    h = "#" * level
    # an explicit anchor: stable ids (#t1) without depending on the attr_list extension
    out = [f'<a id="{tid.lower()}"></a>', "", f"{h} {tid}: {t['title']}", ""]
    out += ["```text", t["shape"], "```", ""]
    out += [t["meaning"], ""]
    out += [f"**Exception:** `{t['exception']}`  ", "**Emitted by:** " + "; ".join(t["op_families"]), ""]
    fam_links = [_family_link(fid, families, url_for) for fid in t["families"]]
    out += ["**Produced by (most likely first):** " + " · ".join(fam_links), ""]
    shown = [c for c in cases if tid in c["templates"]]
    if shown:
        out.append("**Cases:** " + " · ".join(f"[{c['id']} {c['title']}]({url_for(c['page'])})" for c in shown))
        out.append("")
    # Two columns, oldest era first: the text gets the page's width (four columns squeezed it
    # to a word per line), and what printed it and where it came from follow under it.
    out += [f"{h}# Eras", "", "| PyTorch | text, what prints it, where it came from |", "|---|---|"]
    for row in sorted(t["eras"], key=lambda r: _era_key(r["versions"])):
        links = ", ".join(f"[{link['title']}]({link['url']})" for link in row["links"])
        change = _cell(row["change"])
        # a note that ends a sentence takes the links after a space, not a second mark ("(sic).;")
        sep = " " if change.endswith((".", ";", ":", "!", "?")) else "; "
        provenance = sep.join(x for x in (change, links) if x)
        details = [f"`{_code_cell(row['example'])}`"]
        if row["emitted_by"]:
            details.append(f"emitted by {_cell(row['emitted_by'])}")
        if provenance:
            details.append(f"introduced by: {provenance}")
        out.append(f"| {_cell(row['versions'])} | {'<br>'.join(details)} |")
    out += ["", f"**Next step:** {t['next_step']}", ""]
    return out


def _family_link(fid: str, families: dict[str, dict], url_for: Callable[[str], str]) -> str:
    """``[F2 Unregistered state](../families/f2/)``: the id with its name, linked."""
    title = families.get(fid, {}).get("title", "")
    return f"[{f'{fid} {title}'.strip()}]({url_for(f'families/{fid.lower()}/')})"


_FIRST_VERSION = re.compile(r"(?<![A-Za-z\d.])(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?")


def _era_key(versions: str) -> tuple:
    """Sort key putting eras in release order: ``<= 1.1.x`` and ``before 1.13`` just before
    the release they name, ``proposed`` ones and those naming no release last."""
    text = versions.strip().lower()
    if text.startswith("proposed"):
        return (2,)
    m = _FIRST_VERSION.search(text)
    if not m:
        return (1,)
    nums = tuple(0 if g in (None, "x") else int(g) for g in m.groups())
    earlier = text.startswith(("<", "before", "older", "~")) or "pre-release" in text
    return (0, *nums, -1 if earlier else 0)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("`", "'")
