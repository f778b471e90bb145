"""Markdown of the pages generated from the registry at build time (never committed).

Every page is keyed by its ``src_uri`` (where it pretends to live in ``docs/``); links between
pages are written as relative links to ``.md`` / ``.ipynb`` sources, so ``mkdocs build --strict``
validates them like hand-written links.
"""

from __future__ import annotations

import html
import json
import posixpath
from collections.abc import Callable, Iterable
from pathlib import Path

from samedevice import fixes
from samedevice.cases import FAMILY_IDS, RECORD_DEVICE_WORDS, TEMPLATE_IDS, Case, record_summary

from .sitedata import SiteData

CASES_INDEX = "cases/index.md"
FAMILIES_INDEX = "families/index.md"
MESSAGES_INDEX = "messages/index.md"
VERIFICATION = "verification.md"
RULES = "rules.md"  # samedevice check's rules: site/rules_page.py

# Index pages repeat titles and message words of many cases; a pasted error must find the case
# page itself first, so these rank at half weight (Material's per-page search boost).
INDEX_SEARCH_BOOST = 0.5


def case_uri(case: Case) -> str:
    return f"cases/{case.slug}.ipynb"


def family_uri(family_id: str) -> str:
    return f"families/{family_id.lower()}/index.md"


def template_uri(template_id: str) -> str:
    return f"messages/{template_id.lower()}/index.md"


def rel(from_uri: str, to_uri: str) -> str:
    """Relative link from one source file to another, as MkDocs resolves it."""
    return posixpath.relpath(to_uri, posixpath.dirname(from_uri) or ".")


def link_maker(from_uri: str, known_uris: set[str]) -> Callable[[str], str]:
    """For renderers that link by site URL (``families/f2/``): the relative *source* link.

    MkDocs validates links to sources and rewrites them to URLs; a URL-style link would be
    "unrecognized" and pass unchecked.
    """

    def url_for(url: str) -> str:
        path, _, anchor = url.partition("#")
        stem = path.strip("/")
        candidates = ([f"{stem}/index.md", f"{stem}.md", f"{stem}.ipynb"] if stem else ["index.md"])
        for uri in candidates:
            if uri in known_uris:
                return rel(from_uri, uri) + (f"#{anchor}" if anchor else "")
        raise ValueError(f"{from_uri} links to {url!r}, which no page of the site serves")

    return url_for


def plain(text: str) -> str:
    """Inline Markdown code marks dropped: for nav labels, <title> and meta descriptions."""
    return text.replace("`", "")


def cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def front_matter(*, description: str, boost: float | None = None) -> str:
    lines = ["---", f"description: {_yaml_str(description)}"]
    if boost is not None:
        lines += ["search:", f"  boost: {boost}"]
    return "\n".join([*lines, "---", ""])


def _yaml_str(text: str) -> str:
    # Material writes page.meta.description into an HTML attribute without escaping it; once
    # escaped, the text has no double quote left to break the YAML string.
    return '"' + html.escape(plain(text), quote=True).replace("\\", "\\\\") + '"'


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def case_table(data: SiteData, cases: Iterable[Case], page_uri: str, *,
               columns: tuple[str, ...] = ("id", "case", "family", "messages", "verified")) -> str:
    """One row per case; the columns that a page needs, links relative to ``page_uri``."""
    render: dict[str, tuple[str, Callable[[Case], str]]] = {
        "id": ("ID", lambda c: c.id),
        "case": ("Case", lambda c: f"[{cell(c.title)}]({rel(page_uri, case_uri(c))})"),
        "family": ("Family", lambda c: f"[{cell(data.families[c.family].heading)}]"
                                       f"({rel(page_uri, family_uri(c.family))})"),
        # the template's id with its name, as the family column shows the family's
        "messages": ("Messages", lambda c: "<br>".join(
            f"[{cell(data.templates[t].heading)}]({rel(page_uri, template_uri(t))})"
            for t in c.templates)),
        "verified": ("Last verified", lambda c: cell(record_summary(c.records()[0]))
                     if c.records() else "not recorded yet"),
    }
    return _table((render[k][0] for k in columns),
                  ([render[k][1](c) for k in columns] for c in cases))


def cases_index_page(data: SiteData) -> str:
    body = [
        front_matter(description="Every case in the samedevice field guide.", boost=INDEX_SEARCH_BOOST),
        "# All cases",
        "",
        f"{len(data.cases)} real device bugs, each with a failing program, its output, the fix and "
        "how to find the same bug in your code. Browse them "
        f"[by root cause]({rel(CASES_INDEX, FAMILIES_INDEX)}) or "
        f"[by the message PyTorch printed]({rel(CASES_INDEX, MESSAGES_INDEX)}).",
        "",
        case_table(data, data.cases, CASES_INDEX),
    ]
    return "\n".join(body) + "\n"


def families_index_page(data: SiteData) -> str:
    rows = []
    for fid in FAMILY_IDS:
        fam = data.families[fid]
        n = len(data.cases_in_family(fid))
        rows.append([f"[{cell(fam.heading)}]({rel(FAMILIES_INDEX, family_uri(fid))})",
                     cell(fam.summary), str(n)])
    body = [
        front_matter(description="The ten root causes of PyTorch device errors.", boost=INDEX_SEARCH_BOOST),
        "# Cases by root cause",
        "",
        "Every case belongs to exactly one family: what went wrong in the code, whatever the "
        "message said.",
        "",
        _table(["Family", "What went wrong", "Cases"], rows),
    ]
    return "\n".join(body) + "\n"


def family_page(data: SiteData, family_id: str) -> str:
    fam = data.families[family_id]
    uri = family_uri(family_id)
    cases = data.cases_in_family(family_id)
    body = [
        front_matter(description=fam.summary, boost=INDEX_SEARCH_BOOST),
        f"# {fam.heading}",
        "",
        fam.summary,
        "",
        *_recipes_section(data, fixes.for_family(family_id), uri,
                          intro="What fixes this family, whatever the project"),
        "## Cases",
        "",
        "Worked examples: the failing program, its output, the fix.",
        "",
    ]
    if cases:
        body.append(case_table(data, cases, uri, columns=("id", "case", "messages", "verified")))
        templates = sorted({t for c in cases for t in c.templates}, key=TEMPLATE_IDS.index)
        body += ["", "## Messages these cases print", ""]
        body += [f"- [{cell(data.templates[t].heading)}]({rel(uri, template_uri(t))})"
                 for t in templates]
    else:
        body.append("No case in this family yet. "
                    f"[Add one]({rel(uri, 'add-a-case.md')}).")
    body += _family_rules(family_id, uri)
    return "\n".join(body) + "\n"


def _recipes_section(data: SiteData, recipes: list[fixes.Recipe], uri: str, *, intro: str) -> list[str]:
    """"How to fix it": each recipe as Ruff documents a rule -- when it applies, a program that
    fails (and with which message), the same program fixed -- then PyTorch's documentation.
    tests/sim/test_fix_recipes.py runs both programs of every recipe."""
    if not recipes:
        return []
    lines = ["## How to fix it", "", intro + " (the test suite runs each pair below on the simulated "
             "accelerator: the first program fails with the message it names, the second runs "
             "to the end)", ""]
    lines += [f"- [{cell(r.title)}](#{r.id})" for r in recipes]
    lines.append("")
    for r in recipes:
        tpl = data.templates[r.template]
        where = "on a machine without a GPU " if not r.needs_cuda else ""
        lines += [
            f"### {r.title} {{#{r.id}}}", "",
            r.text, "",
            f"Fails {where}with [{cell(tpl.heading)}]({rel(uri, template_uri(r.template))}):", "",
            "```python", r.before.rstrip("\n"), "```", "",
            "Use instead:", "",
            "```python", r.after.rstrip("\n"), "```", "",
        ]
        if r.docs:
            lines += ["PyTorch documentation: " + ", ".join(f"[{d.title}]({d.url})" for d in r.docs)
                      + ".", ""]
    return lines


def _family_rules(family_id: str, uri: str) -> list[str]:
    """The ``samedevice check`` rules of the family, linked to their sections of the Rules page."""
    from samedevice.check.registry import RULES as CHECK_RULES

    rules = [r for r in CHECK_RULES if r.family == family_id]
    if not rules:
        return []
    return ["", "## Find it before it runs", "",
            "`samedevice check` finds this family's statically visible forms in your source:", "",
            *(f"- [{r.code} `{r.name}`]({rel(uri, RULES)}#{r.code.lower()}): {cell(r.summary)}"
              for r in rules)]


def template_page(data: SiteData, template_id: str) -> str:
    tpl = data.templates[template_id]
    uri = template_uri(template_id)
    cases = data.cases_with_template(template_id)
    body = [
        front_matter(description=f"Cases that print PyTorch device-error message {tpl.heading}.",
                     boost=INDEX_SEARCH_BOOST),
        f"# {tpl.heading}",
        "",
    ]
    if tpl.text:
        body += ["```text", tpl.text, "```", ""]
    if tpl.meaning:
        body += [tpl.meaning, ""]
    # The catalogue's page anchors each template (<a id="t2">) with its eras and provenance.
    eras = f"{rel(uri, MESSAGES_INDEX)}#{template_id.lower()}" if data.catalogue_available \
        else rel(uri, MESSAGES_INDEX)
    body += [f"How this message's text changed across PyTorch releases: [Error messages]({eras}).", ""]
    if tpl.next_step:
        body += ["## What to do first", "", tpl.next_step, ""]
    if tpl.families:
        causes = ", ".join(f"[{cell(data.families[f].heading)}]({rel(uri, family_uri(f))})"
                           for f in tpl.families)
        body += [f"The root causes that print it, most frequent first: {causes}.", ""]
    body += _recipes_section(data, fixes.for_template(template_id, tpl.families[:2]), uri,
                             intro="The fixes for the message and its most frequent causes")
    body += ["## Cases that can print it", ""]
    if cases:
        body.append(case_table(data, cases, uri, columns=("id", "case", "family", "verified")))
    else:
        body.append(f"No case prints this message yet. [Add one]({rel(uri, 'add-a-case.md')}).")
    return "\n".join(body) + "\n"


def fallback_messages_page(data: SiteData) -> str:
    """The Error messages page while the explain catalogue's own renderer is not there."""
    rows = [[f"[{t}]({rel(MESSAGES_INDEX, template_uri(t))})", cell(data.templates[t].title),
             str(len(data.cases_with_template(t)))] for t in TEMPLATE_IDS]
    body = [
        front_matter(description="PyTorch device-error message templates.", boost=INDEX_SEARCH_BOOST),
        "# Error messages",
        "",
        "The device errors PyTorch prints fall into thirteen message templates, T1 to T13.",
        "",
        _table(["Template", "Name", "Cases"], rows),
    ]
    return "\n".join(body) + "\n"


COVERAGE = "benchmarks/coverage.json"  # written by benchmarks/coverage.py --write


def coverage_section(data: SiteData) -> list[str]:
    """The dev-set coverage figures, as ``benchmarks/coverage.py`` measured them (not typed)."""
    import json

    try:
        cov = json.loads((data.root / COVERAGE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []

    def share(k: int, n: int) -> str:
        return f"{100 * k / n:.0f}% ({k} of {n})" if n else "n/a"

    rows = [[split, str(f["reports"]),
             share(f["situation_has_page"], f["reports"]),
             share(f["family_in_top3"], f["labelled_family"])]
            for split, f in cov["splits"].items()]
    return [
        "",
        "## Coverage of real reports",
        "",
        f"Measured by `benchmarks/coverage.py` on {cov['date']} over the dev set of real, labelled "
        f"reports (`{cov['devset']}`), with {cov['cases']} cases, for each half of the dev set: "
        "the share of reports whose situation (what the user was doing) has a page, and, among "
        "reports whose root-cause family is known, the share for which `samedevice explain` lists "
        f"a page of that family among its first {cov['top']} cases.",
        "",
        _table(["Half", "Reports", "Situation has a page", f"Right family in explain's first {cov['top']}"],
               rows),
    ]


def verification_page(data: SiteData) -> str:
    rows = []
    never = []
    for c in data.cases:
        link = f"[{c.id}]({rel(VERIFICATION, case_uri(c))}) {cell(c.title)}"
        records = c.records()
        if not records:
            never.append(c)
            rows.append([link, "not recorded", "", "", "", ""])
        for r in records:
            rows.append([link, cell(str(r.get("date", ""))), cell(str(r.get("torch", ""))),
                         cell(RECORD_DEVICE_WORDS.get(str(r.get("device")), str(r.get("device")))),
                         cell(str(r.get("gpu") or "")), cell(str(r.get("result", "")))])
    on_gpu = sum(any(r.get("device") == "cuda" and r.get("result") == "pass" for r in c.records())
                 for c in data.cases)
    body = [
        front_matter(description="When each case was last verified, on which PyTorch and device."),
        "# Verification",
        "",
        "`samedevice verify` runs each case's broken program and requires the exact error its page "
        "documents, then runs the fixed program and compares its outputs with a plain CPU run. "
        "A run with `--record` keeps the result in `cases/<slug>.verified.json`: one record per "
        "device and PyTorch version, the newest first. "
        f"[How CPU verification works]({rel(VERIFICATION, 'how-cpu-verification-works.md')}).",
        "",
        f"{len(data.cases)} cases; {len(data.cases) - len(never)} with a record, "
        f"{on_gpu} verified on a real GPU.",
        "",
        _table(["Case", "Date", "PyTorch", "Device", "GPU", "Result"], rows),
        *_real_releases_section(data),
        *coverage_section(data),
    ]
    return "\n".join(body) + "\n"


def _real_releases_section(data: SiteData) -> list[str]:
    """The opt-in upstream tier's records: the real library's buggy and fixed releases, from
    PyPI, run on the simulated accelerator (``cases/<slug>.upstream.json``)."""
    rows = []
    for c in data.cases:
        record = c.upstream_record()
        if not record:
            continue
        link = f"[{c.id}]({rel(VERIFICATION, case_uri(c))}) {cell(c.title)}"
        outcomes = "; ".join(f"{r['version']} {r['observed']}"
                             + ("" if r["observed"] == r["expected"] else f" (expected {r['expected']})")
                             for r in record["results"])
        rows.append([link, cell(f"`{record['package']}`"), cell(outcomes),
                     cell(str(record.get("date", ""))), cell(str(record.get("torch", "")))])
    if not rows:
        return []
    return ["", "## Real releases", "",
            f"For {len(rows)} cases the library itself is on PyPI in a buggy and a fixed release. "
            "The opt-in upstream tier (`pytest -m upstream tests/upstream`, not part of `make test`: "
            "it downloads the releases) installs each release into a throwaway folder and runs a "
            "driver through the real code path on the simulated accelerator: the buggy release "
            "must raise the page's exact message from inside the library's buggy function, the "
            "fixed one must run. Each case page lists the releases under *Affected versions*.",
            "", _table(["Case", "Package", "Releases (fail = the documented error)", "Date", "PyTorch"], rows)]


def _rules_page(data: SiteData) -> str:
    from .rules_page import rules_page  # it builds on this module's helpers

    return rules_page(data)


def page_uris() -> list[str]:
    """Where the generated pages live, known before their content is."""
    return [CASES_INDEX, FAMILIES_INDEX, MESSAGES_INDEX, VERIFICATION, RULES,
            *(family_uri(f) for f in FAMILY_IDS), *(template_uri(t) for t in TEMPLATE_IDS)]


def virtual_pages(data: SiteData, messages_page: str | None) -> dict[str, str]:
    """Every generated page: ``src_uri -> Markdown``. ``messages_page``: the explain catalogue's
    "Error messages" page, or None for the fallback table."""
    if messages_page is None:
        messages_page = fallback_messages_page(data)
    else:
        messages_page = front_matter(description="Every PyTorch device-error message, by template "
                                     "and release.", boost=INDEX_SEARCH_BOOST) + messages_page
    pages = {
        CASES_INDEX: cases_index_page(data),
        FAMILIES_INDEX: families_index_page(data),
        MESSAGES_INDEX: messages_page,
        VERIFICATION: verification_page(data),
        RULES: _rules_page(data),
    }
    for fid in FAMILY_IDS:
        pages[family_uri(fid)] = family_page(data, fid)
    for tid in TEMPLATE_IDS:
        pages[template_uri(tid)] = template_page(data, tid)
    return pages


# -- the upstream tier's real libraries (docs/run-gpu-code-on-cpu.md) ----------------------------

LIBRARIES_RECORD = "tests/upstream/libraries.json"
LIBRARIES_MARKER = "<!-- samedevice:real-libraries -->"


def real_libraries_table(root: Path) -> str:
    """What the last run of ``tests/upstream/test_libraries.py`` recorded, as a table."""
    path = root / LIBRARIES_RECORD
    if not path.exists():
        return "No run recorded yet: `pytest -m upstream tests/upstream/test_libraries.py` records one."
    record = json.loads(path.read_text(encoding="utf-8"))
    rows = [[cell(f"`{lib['library']}` {lib['version']}"), cell(f"`{lib['driver'].rsplit('/', 1)[-1]}`"),
             str(lib["simulated_tensors"]), str(lib["compared_values"]), cell(f"`{lib['bug']}`")]
            for lib in record["libraries"]]
    head = (f"Recorded {record['date']} with PyTorch {record['torch']} on the simulated GPU "
            f"(`{record['command']}`): each program equals its plain-CPU run value for value, "
            "and its injected bug raises the text below.")
    return head + "\n\n" + _table(["Library", "Program", "Simulated tensors", "Values compared",
                                    "The injected bug raises"], rows)
