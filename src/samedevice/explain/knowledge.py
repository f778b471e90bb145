"""Everything explain knows, as one plain dict: the catalogue, the rules and the case metadata.

The Python engine and the browser read the same dict: ``build()`` here, serialised to JSON by
samedevice.explain.browser for the site. Nothing in it is kept by hand: templates come from
data/templates.toml, rules from explain/rules.toml, families from data/families.toml, cases from
the case registry (samedevice.cases), each case's signatures from parsing its own documented
messages with the same parser users' pastes go through.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

from samedevice.explain import catalogue
from samedevice.explain.cache import SCHEMA
from samedevice.explain.dialect import expand

RULES = Path(__file__).resolve().with_name("rules.toml")
# case library_frames under PyTorch itself: plumbing, never evidence for one case
_PLUMBING = re.compile(r"^(?:torch)/")


@cache
def _raw_rules() -> dict:
    return tomllib.loads(RULES.read_text(encoding="utf-8"))


def load_rules() -> dict:
    """rules.toml with every pattern expanded into the shared dialect."""
    raw = _raw_rules()
    syntax = catalogue.macros()

    def x(pattern: str, mode: str = "collapsed") -> str:
        return expand(pattern, syntax, mode)

    clean = dict(raw["clean"])
    # these run on the raw paste, several lines at once: spaces never cross a line break
    clean["ansi"] = x(clean["ansi"], "raw")
    clean["entity"] = x(clean["entity"], "raw")
    prefixes = "|".join(x(p, "raw") for p in clean.pop("line_prefixes"))
    clean["prefix"] = r"^(?:[^\S\n]*(?:" + prefixes + "))+"
    clean["boundary"] = x(clean["boundary"], "raw")
    messages = dict(raw["messages"])
    # anchors run on the lower-cased paste; a space may cross a line break (wrapped messages)
    messages["anchor"] = "|".join(x(a, "anchor") for a in messages.pop("anchors"))
    messages["exception"] = x(messages["exception"])
    frames = dict(raw["frames"])
    frames["patterns"] = [{"regex": x(p["regex"]), "source": p["source"]} for p in frames["patterns"]]
    for key in ("arrow", "labelled_source", "carets", "exception_line", "library_root", "torch_internal"):
        frames[key] = x(frames[key])
    rules = []
    for r in raw["rule"]:
        rule = {
            "id": r["id"],
            "where": r["where"],
            "families": dict(r["families"]),
            "why": " ".join(r["why"].split()),
        }
        for key in ("regex", "unless", "also", "func"):
            if key in r:
                rule[key] = x(r[key])
        if "when" in r:
            rule["when"] = {k: x(v) for k, v in r["when"].items()}
        if "scope" in r:
            rule["scope"] = r["scope"]
        if "templates" in r:
            rule["templates"] = list(r["templates"])
        rules.append(rule)
    return {
        "clean": clean,
        "messages": messages,
        "frames": frames,
        "versions": [x(p) for p in raw["versions"]["patterns"]],
        "devices": {
            "map": [{"regex": x(e["regex"]), "device": e["device"]} for e in raw["devices"]["map"]],
            "not_accelerators": list(raw["devices"]["not_accelerators"]),
            "accelerators": list(raw["devices"]["accelerators"]),
        },
        "ops": {"strip": x(raw["ops"]["strip"]), "overload": x(raw["ops"]["overload"])},
        "scoring": {**raw["scoring"], "generic_fragment": x(raw["scoring"]["generic_fragment"])},
        "rules": rules,
        "next_steps": dict(raw["next_steps"]),
    }


def family_entries() -> dict[str, dict]:
    from samedevice.cases import families

    return {
        fid: {"id": fid, "title": f["title"], "slug": f["slug"], "summary": f["summary"], "page": f"families/{fid.lower()}/"}
        for fid, f in families().items()
    }


def case_entries(root: Path | None = None, problems: list[str] | None = None) -> list[dict]:
    """Case metadata explain needs, from the case registry (an empty list outside a checkout).

    A malformed case file is skipped, its problems appended to ``problems``: one bad file must not
    keep explain from answering (the CLI reports them on stderr)."""
    from samedevice.cases import CaseError, parse_cases, repo_root

    if root is None:
        try:
            root = repo_root()
        except CaseError:
            return []  # an installed package without the checkout: explain still reads messages
    cases, bad = parse_cases(root)
    if problems is not None:
        problems.extend(bad)
    out = []
    for c in sorted(cases, key=lambda c: c.id):
        out.append(
            {
                "slug": c.slug,
                "id": c.id,
                "title": c.title,
                "summary": c.summary,
                "family": c.family,
                "templates": list(c.templates),
                "template": c.error.template,
                "op": c.error.op,
                "argument": c.error.argument,
                "devices": list(c.error.devices),
                "messages": [m.text for m in c.error.messages],
                # fragments compare against paths normalised the same way (lower case, "/"), the
                # most specific first: a path beats a bare file name
                "library_frames": sorted(
                    {
                        frag
                        for frag in (f.replace("\\", "/").strip("/").lower() for f in c.library_frames)
                        # PyTorch's own plumbing (torch/utils/_contextlib.py under every no_grad,
                        # torch/serialization.py under every torch.load) is in half the tracebacks:
                        # it says nothing about which case this is
                        if frag and not _PLUMBING.search(frag)
                    },
                    key=lambda f: ("/" not in f, -len(f), f),
                ),
                "page": c.page_url,
            }
        )
    return out


def build(root: Path | None = None, *, with_cases: bool = True) -> dict:
    """The whole knowledge base, JSON-ready (``with_cases=False``: the message catalogue only)."""
    from samedevice.explain.messages import find_errors

    templates = catalogue.load_templates()
    kb = load_rules()
    kb["schema"] = SCHEMA
    kb["forms"] = [form for t in templates.values() for form in t["forms"]]
    kb["templates"] = {
        tid: {k: t[k] for k in ("id", "title", "shape", "meaning", "exception", "families", "next_step", "decide", "page")}
        for tid, t in templates.items()
    }
    kb["families"] = family_entries()
    problems: list[str] = []
    cases = case_entries(root, problems) if with_cases else []
    kb["case_problems"] = problems
    for case in cases:
        # a case's signatures are its own documented messages, read by the same parser
        signatures = []
        for text in case.pop("messages"):
            for e in find_errors(text.split("\n"), kb):
                signatures.append(
                    {k: e[k] for k in ("template", "op", "op_base", "argument", "common_kind", "argdev_kind")}
                )
        case["signatures"] = signatures
    # a fragment several cases list (transformers/trainer.py) is shared evidence: each of them
    # gets its share, so one frame never adds a full weight to several families at once
    listed: dict[str, int] = {}
    for case in cases:
        for fragment in case["library_frames"]:
            listed[fragment] = listed.get(fragment, 0) + 1
    for case in cases:
        case["frame_share"] = {f: 1.0 / listed[f] for f in case["library_frames"]}
    kb["cases"] = cases
    return kb
