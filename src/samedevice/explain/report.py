"""The human-readable ``samedevice explain`` report."""

from __future__ import annotations

import textwrap


def render(result: dict, url: callable, width: int = 100) -> str:
    out: list[str] = []

    def para(text: str, indent: str = "  ") -> None:
        out.extend(textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent))

    if result["template"] is None:
        out.append("No PyTorch device error recognised in the input.")
        if result["next"]:
            out.append("")
            para(result["next"])
        if result["families"]:
            out.append("")
            out.append("The traceback still points to:")
            _causes(result, out, para)
        if result["cases"]:
            _cases(result, out, url)
        if not result["next"] and not result["families"] and not result["cases"]:
            para(
                "explain knows the same-device messages of PyTorch 1.0-2.14 (templates T1-T13); "
                "paste the whole error, including the last line of the traceback."
            )
        return "\n".join(out) + "\n"

    out.append(f"{result['template']}: {result['title']}")
    line = f" (line {result['line']})" if result["line"] else ""
    para(f"{result['exception']}: {result['message']}{line}")
    facts = []
    if result["op"]:
        facts.append(f"op {result['op_base'] or result['op']}" + (f" ({result['wrapper']})" if result["wrapper"] != result["op"] else ""))
    if result["argument"]:
        facts.append(f"argument {result['argument']}" + (f" on {result['argument_device']}" if result["argument_device"] else ""))
    if result["common_device"]:
        facts.append(f"the other tensors on {result['common_device']}")
    elif result["devices"]:
        facts.append("devices " + ", ".join(result["devices"]))
    if result["era"]:
        facts.append(f"printed by PyTorch {result['era']}")
    if result["torch_version"]:
        facts.append(f"torch {result['torch_version']} named in the paste")
    if facts:
        para(" · ".join(facts))
    _code(result, out, para)
    out.append("")
    out.append("What it means")
    para(result["meaning"])
    out.append("")
    if result["thin"]:
        out.append("Possible causes (the message alone cannot tell these apart)")
        para(thin_text(result))
    else:
        out.append("Likely causes, best first")
    _causes(result, out, para)
    if result["cases"]:
        _cases(result, out, url)
    out.append("")
    out.append("Pages to read")
    for page in result["pages"]:
        out.append(f"  {url(page['url'])}  {page['id']} {_plain(page['title'])}")
    out.append("")
    out.append("Next step")
    para(result["next"])
    others = result["errors"][1:]
    if others:
        out.append("")
        out.append(f"Other device errors in this paste ({len(others)})")
        for e in others:
            para(f"paste line {e['line']}: {e['template']} ({e.get('title', '')}) {e['message']}")
    return "\n".join(out) + "\n"


def thin_text(result: dict) -> str:
    """Why a thin paste's causes are in this order, in the user's words: how often each cause
    makes this message (a frequency, not evidence), and the step that decides."""
    title = f" ({result['title']})" if result.get("title") else ""
    head = f"Nothing in the paste beyond the {result['template']}{title} message points to one of them; "
    titles = {r["family"]: r["title"] for r in result.get("ranking", [])}
    prior = result.get("prior")
    code = ("" if result.get("code") and result["code"].get("diagnosis") else
            " explain decides it from your code: run it where the error happened (it reads the files "
            "the traceback names), or give it your checkout with --source DIR.")
    if not prior:
        return head + "they are listed from the cause this message most often has. The next step below decides." + code
    often = ", ".join(f"{f['family']} {titles.get(f['family'], '')} ({f['reports']} of {prior['reports']})".replace("  ", " ")
                      for f in prior["families"])
    return (
        head + f"the first is the cause this message's wording points to; most often, in real {prior['template']} "
        f"reports: {often}. That is a frequency, not evidence: the next step below decides." + code
    )


def _causes(result: dict, out: list[str], para) -> None:
    # each piece of evidence once, under the family it supports (engine assigns it)
    for n, r in enumerate(result["ranking"][:3], 1):
        if result["thin"]:
            out.append(f"  {n}. {r['family']} {r['title']}")
            continue
        out.append(f"  {n}. {r['family']} {r['title']}  (score {r['score']:g})")
        shown = 0
        for e in result["evidence"]:
            if e["family"] != r["family"]:
                continue
            # the user's file:line when the evidence is a frame of their code, else the paste's line
            where = f"{e['at']}: " if e.get("at") else f"paste line {e['line']}: " if e["line"] else ""
            para(f"- {where}{e['why']}", indent="     ")
            shown += 1
            if shown == 3:
                break
        if shown == 0:
            para("- nothing in the paste points here; listed because the message is often produced by this family", indent="     ")


def _cases(result: dict, out: list[str], url) -> None:
    out.append("")
    out.append("Matching cases")
    for c in result["case_ranking"][:5]:
        out.append(f"  {c['id']} {_plain(c['title'])}")
        out.append(f"     {url(c['page'])}  ({'; '.join(c['why'])})")


def _plain(title: str) -> str:
    """Case titles are Markdown (`code` spans for the site); a terminal shows them plain."""
    return title.replace("`", "")


def _code(result: dict, out: list[str], _para, width: int = 100) -> None:
    """What the user's own code shows: the culprit, or what was read and what is still open.
    Paths are never broken at their hyphens or slashes: a user copies them."""
    code = result.get("code")
    if not code:
        return

    def para(text: str, indent: str = "  ") -> None:
        out.extend(textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent,
                                 break_on_hyphens=False, break_long_words=False))
    diag = code.get("diagnosis")
    culprit = result.get("culprit")
    if culprit and culprit.get("located_by") == "scan":
        # the paste names no line: places to look, not a verdict
        out.append("")
        out.append("Where to look in your code (the paste names no line of it)")
        for c in culprit.get("candidates", [])[:3]:
            para(f"- {c['at']}  {c['statement'][:100]}")
            para(f"`{c['expr'][:60]}` made at {c['made_at']}", indent="      ")
    elif culprit:
        out.append("")
        out.append("The culprit, from your code")
        para(f"`{culprit['expr']}` in {culprit['statement']}")
        para(f"made at {culprit['made_at']}", indent="    ")
        para(f"why: {culprit['why']}", indent="    ")
        para(f"fix: {culprit['fix']}", indent="    ")
    elif diag:
        out.append("")
        out.append("Your code, read")
        para(f"the failing statement: {diag['path']}:{diag['line']}  {diag['statement']}")
        if diag.get("open"):
            para(f"still open: {diag['open']}", indent="    ")
    for note in code.get("notes", [])[:3]:
        para(f"(source not read: {note})" if "skipped" in note or "cannot" in note else f"({note})")
