"""explain: a paste in, the template, the ranked root-cause families and the matching cases out.

The pipeline is clean -> messages -> frames -> evidence -> ranking, every step driven by the
knowledge dict (samedevice.explain.knowledge). The browser runs the same pipeline on the same
dict; tests/explain/test_parity.py holds both to identical results.
"""

from __future__ import annotations

from samedevice.explain.clean import clean_lines
from samedevice.explain.dialect import ascii_lower, collapse, compiled
from samedevice.explain.evidence import collect, signature_text
from samedevice.explain.fingerprint import matches, paste_tokens
from samedevice.explain.frames import read_frames
from samedevice.explain.messages import find_errors

# T1 and T2 are one check in two eras: a case documented with one matches a paste with the other.
_SAME_CHECK = {"T1": "T1", "T2": "T1"}


def explain_text(text: str, kb: dict, *, keep_frames: bool = False) -> dict:
    """The explanation of one paste (already decoded and checked) as a JSON-ready dict.
    ``keep_frames`` adds the traceback's frames (``frame_list``: path, function, line in the
    file), for the reading of the user's code that follows (``samedevice.explain.code``)."""
    lines = clean_lines(text, kb)
    errors = find_errors(lines, kb)
    primary = _primary(errors)
    cfg = kb["clean"]
    n = len(lines)
    if primary is not None:
        p = primary["line"] - 1
        lo, hi = max(0, p - cfg["region_before"]), min(n, p + cfg["region_after"] + 1)
    else:
        lo, hi = max(0, n - cfg["region_before"] - cfg["region_after"]), n
    region = [collapse(line[: cfg["max_line"]]) for line in lines[lo:hi]]
    frames = read_frames(region, lo, kb)
    context = _context(region, lo, errors)
    evidence, scores = collect(primary, frames, context, lo, kb)
    case_hits = _case_frames("\n".join(region), lo, frames, kb)
    for case, fragment, line in case_hits:
        generic = compiled(kb["scoring"]["generic_fragment"]).search(fragment)
        weight = kb["scoring"]["case_frame_generic_family" if generic else "case_frame_family"]
        weight *= case["frame_share"].get(fragment, 1.0)
        if weight <= 0:
            continue  # a file name many projects use (train.py) says nothing about the family
        scores[case["family"]] = scores.get(case["family"], 0.0) + weight
        evidence.append(
            {
                "rule": "case-library-frame",
                "where": "frame",
                "families": {case["family"]: weight},
                "match": fragment,
                "line": line,
                "at": "",
                "case": case["slug"],
                "why": f"the traceback passes through `{fragment}`, where case {case['id']} ({case['title']}) happens",
            }
        )
    tokens, prefixes = paste_tokens(lines, lo, hi, errors)
    printed = matches(tokens, prefixes, kb)
    _fingerprint_evidence(printed, case_hits, scores, evidence, kb)
    ranking = _rank_families(scores, primary, evidence, kb)
    prior = None
    # the report counts are per template: a form with its own family list (T13's RNN, stft, MPS
    # texts ...) is not ranked by what other forms of the template usually mean
    if primary is not None and not evidence and not primary["own_families"]:
        ranking, prior = _prior_fill(ranking, primary["template"], kb)
    cases = _rank_cases(primary, case_hits, printed, ranking, kb)
    out = _result(primary, errors, ranking, cases, evidence, frames, region, kb)
    out["prior"] = prior
    if keep_frames:
        out["frame_list"] = [{"path": f["path"], "lib": f["lib"], "func": f["func"], "lineno": f["lineno"],
                              "torch": f["torch"], "source": f["source"]} for f in frames]
        # the names the paste holds (its prose, frames and code), for reading the user's code
        out["paste_words"] = sorted(tokens)
    return out


def _fingerprint_evidence(printed, case_hits, scores: dict[str, float], evidence: list[dict], kb: dict) -> None:
    """A case's own identifiers in the paste count for its family (once: a library frame of the
    same case already did)."""
    s = kb["scoring"]
    generic = compiled(s["generic_fragment"])
    # a bare file name (finetune.py) names a case but gave its family nothing: the names can
    framed = {case["slug"] for case, fragment, _ in case_hits if not generic.search(fragment)}
    for case, found, score, line in printed:
        if case["slug"] in framed:
            continue
        weight = s["case_fingerprint_family"] * min(score, s["fingerprint_cap"])
        scores[case["family"]] = scores.get(case["family"], 0.0) + weight
        names = ", ".join(f"`{n}`" for n in found[:4])
        evidence.append(
            {
                "rule": "case-fingerprint",
                "where": "text",
                "families": {case["family"]: weight},
                "match": ", ".join(found),
                "line": line,
                "at": "",
                "case": case["slug"],
                "why": f"the paste names {names}, identifiers of the code of case {case['id']} ({case['title']})",
            }
        )


def _primary(errors: list[dict]) -> dict | None:
    """The error explained: the first in the paste (the first of a named form, if any), unless a
    later one is the same message in full. An issue's title line ("Expected all tensors to be on the same device") or a summary
    before the log often holds the message cut short; the traceback's last line then holds the
    op, the argument and the devices the evidence rules read."""
    if not errors:
        return None
    # a last-resort form's words ("a device mismatch error since ...") are often the reporter's
    # own prose before the message: any named form's error is explained before them
    start = next((i for i, e in enumerate(errors) if not e["fallback"]), 0)
    first = errors[start]
    short = ascii_lower(first["message"])
    best = first
    for e in errors[start + 1 :]:
        if len(e["message"]) > len(best["message"]) and short in ascii_lower(e["message"]):
            best = e
    return best


def _prior_fill(ranking: list[dict], template: str, kb: dict) -> tuple[list[dict], dict | None]:
    """A thin paste: rank 1 stays the catalogue's first family; ranks 2-3 go to the families that
    most often caused this template in the dev set's labelled tune-half reports that are thin
    pastes themselves (prior.toml: the population the counts are applied to).
    Leave-one-out on the tune half: top-3 up, top-1 down when the counts also chose rank 1, so
    they do not. It is a frequency, not evidence: the result says so in ``prior``. Per template,
    not per form: per form the counts were too sparse (benchmarks/explain_prior_loo.py)."""
    p = kb["reports_prior"]
    counts = p["templates"].get(template, {})
    if not ranking or not counts:
        return ranking, None
    order = [r["family"] for r in ranking]
    ids = list(kb["families"])
    first = order[0]
    counted = sorted(
        (f for f, n in counts.items() if n >= p["min_reports"] and f != first),
        key=lambda f: (-counts[f], order.index(f) if f in order else len(order), ids.index(f) if f in ids else len(ids)),
    )
    # Slot by slot, a counted family takes the place of the catalogue's next one only when it has
    # at least `margin` times its reports (prior.toml; benchmarks/explain_prior.py says which
    # margin leave-one-out on the tune half prefers).
    margin = p.get("margin", 1)
    often: list[str] = []
    placed: list[str] = []
    for _ in range(p["slots"]):
        nxt = next((f for f in order[1:] if f not in placed), None)
        cand = next((f for f in counted if f not in placed), None)
        if cand is None:
            break
        if nxt is not None and cand != nxt and counts[cand] < margin * counts.get(nxt, 0):
            placed.append(nxt)
        else:
            placed.append(cand)
            often.append(cand)
    if not often:
        return ranking, None
    by_family = {r["family"]: r for r in ranking}
    moved = []
    for fid in placed:
        entry = by_family.get(fid)
        if entry is None:  # a family the catalogue does not list for this template
            fam = kb["families"].get(fid, {"title": fid, "page": f"families/{fid.lower()}/"})
            entry = {"family": fid, "title": fam["title"], "score": 0.0, "page": fam["page"], "evidence": []}
        moved.append(entry)
    rest = [r for r in ranking[1:] if r["family"] not in placed]
    total = sum(counts.values())
    prior = {
        "template": template,
        "reports": total,
        "families": [{"family": f, "reports": counts[f]} for f in often],
    }
    return [ranking[0], *moved, *rest], prior


def _assign(evidence: list[dict], order: list[str]) -> None:
    """Each piece of evidence supports one family: the one it weighs most (ties: the better
    ranked), so the report prints it once, under that family."""
    for e in evidence:
        best = None
        for fid, w in e["families"].items():
            rank = order.index(fid) if fid in order else len(order)
            if w > 0 and (best is None or (-w, rank) < best[0]):
                best = ((-w, rank), fid)
        e["family"] = best[1] if best else ""


def _context(region: list[str], lo: int, errors: list[dict]) -> str:
    """The region with the error messages blanked: text rules look at what surrounds them."""
    out = list(region)
    for e in errors:
        for first, last, lead in e["spans"]:
            for i in range(first, last + 1):
                if lo <= i < lo + len(out):
                    out[i - lo] = lead if i == first else ""
    return "\n".join(out)


def _case_frames(region_text: str, lo: int, frames: list[dict], kb: dict) -> list[tuple[dict, str, int]]:
    """Cases whose library_frames appear as a traceback frame (else anywhere in the paste as a
    path), at a path-component boundary; each with the fragment and the paste line."""
    norm = region_text.lower().replace("\\", "/")
    paths = [("/" + f["path"].lower(), f["line"] + 1) for f in frames]
    hits = []
    for case in kb["cases"]:
        found = None
        for fragment in case["library_frames"]:
            for path, line in paths:
                if _find_path(path, fragment) >= 0:
                    found = (fragment, line)
                    break
            if found:
                break
        if found is None:
            for fragment in case["library_frames"]:
                at = _find_path(norm, fragment)
                if at >= 0:
                    found = (fragment, lo + norm.count("\n", 0, at) + 1)
                    break
        if found:
            hits.append((case, found[0], found[1]))
    return hits


def _find_path(text: str, fragment: str) -> int:
    start = 0
    while True:
        at = text.find(fragment, start)
        if at < 0:
            return -1
        before = text[at - 1] if at > 0 else "\n"
        if before in "/\"' \n[(":
            return at
        start = at + 1


def _rank_families(scores: dict[str, float], primary: dict | None, evidence: list[dict], kb: dict) -> list[dict]:
    prior_order = primary["families"] if primary else []
    ids = list(kb["families"])

    def key(fid: str) -> tuple:
        rank = prior_order.index(fid) if fid in prior_order else len(prior_order)
        return (-scores[fid], rank, ids.index(fid) if fid in ids else len(ids))

    ranked = sorted((f for f in scores if scores[f] > 0), key=key)
    _assign(evidence, ranked)
    ranking = []
    for fid in ranked:
        fam = kb["families"].get(fid, {"title": fid, "page": f"families/{fid.lower()}/"})
        ranking.append(
            {
                "family": fid,
                "title": fam["title"],
                "score": scores[fid],
                "page": fam["page"],
                "evidence": [e["rule"] for e in evidence if e["family"] == fid],
            }
        )
    return ranking


def _rank_cases(primary: dict | None, case_hits, printed, ranking: list[dict], kb: dict) -> list[dict]:
    s = kb["scoring"]
    family_scores = {r["family"]: r["score"] for r in ranking}
    best = ranking[0]["score"] if ranking else 0.0
    framed = {case["slug"]: fragment for case, fragment, _ in case_hits}
    named = {case["slug"]: (found, score) for case, found, score, _ in printed}
    # A template that few cases print (T7, T10, ...) points at them by itself; for the common
    # ones (T1, T2) the op, argument or device orientation must match too.
    template = _SAME_CHECK.get(primary["template"], primary["template"]) if primary else None
    printing = sum(
        any(_SAME_CHECK.get(sig["template"], sig["template"]) == template for sig in c["signatures"])
        for c in kb["cases"]
    )
    rare = primary is not None and printing <= max(1.0, s["case_rare_share"] * len(kb["cases"]))
    out = []
    for order, case in enumerate(kb["cases"]):
        why = []
        score = 0.0
        if case["slug"] in framed:
            generic = compiled(s["generic_fragment"]).search(framed[case["slug"]])
            score += s["case_frame_generic"] if generic else s["case_frame"]
            why.append(f"traceback passes through {framed[case['slug']]}")
        if case["slug"] in named:
            found, units = named[case["slug"]]
            score += s["case_fingerprint"] * min(units, s["fingerprint_cap"])
            why.append("the paste names its code: " + ", ".join(found[:4]))
        sig, same = _signature_score(primary, case, s) if primary else (0.0, [])
        if sig > 0:
            score += sig
            why.append(f"its documented error has the same {', '.join(same)} (score {sig:g})")
        if case["slug"] not in framed and case["slug"] not in named and sig < s["case_min_signature"] \
                and not (rare and sig > 0):
            continue
        if best > 0:
            score += s["family_share"] * family_scores.get(case["family"], 0.0) / best
        out.append(
            {
                "slug": case["slug"],
                "id": case["id"],
                "title": case["title"],
                "family": case["family"],
                "score": score,
                "page": case["page"],
                "why": why,
                "_order": order,
            }
        )
    out.sort(key=lambda c: (-c["score"], c["_order"]))
    for c in out:
        del c["_order"]
    return out


def _signature_score(primary: dict, case: dict, s: dict) -> tuple[float, list[str]]:
    """How well the paste's error matches one of the case's documented errors, and what
    matched (template, op, argument, device order: shown to the user as the reason)."""
    best, best_same = 0.0, []
    template = _SAME_CHECK.get(primary["template"], primary["template"])
    op = {primary["op"].lower(), primary["op_base"].lower()} - {""}
    for sig in case["signatures"]:
        if _SAME_CHECK.get(sig["template"], sig["template"]) != template:
            continue
        score = s["case_template"]
        # T1 and T2 are one check in two eras' words: name both when they differ
        same = ["template " + "/".join(dict.fromkeys((primary["template"], sig["template"])))]
        if op and ({sig["op"].lower(), sig["op_base"].lower()} & op):
            score += s["case_op"]
            same.append(f"op {sig['op_base'] or sig['op']}")
        if primary["argument"] and primary["argument"].lower() == sig["argument"].lower():
            score += s["case_argument"]
            same.append(f"argument {sig['argument']}")
        if (
            primary["common_kind"]
            and primary["common_kind"] == sig["common_kind"]
            and primary["argdev_kind"] == sig["argdev_kind"]
        ):
            score += s["case_orientation"]
            same.append("device order")
        if score > best:
            best, best_same = score, same
    return best, best_same


def _torch_version(region: list[str], kb: dict) -> str:
    text = "\n".join(region)
    for pattern in kb["versions"]:
        m = compiled(pattern).search(text)
        if m:
            return m.group("v")
    return ""


def _result(primary, errors, ranking, cases, evidence, frames, region, kb) -> dict:
    # strongest first
    ordered = sorted(enumerate(evidence), key=lambda ie: (-max(ie[1]["families"].values(), default=0.0), ie[0]))
    evidence_out = [e for _, e in ordered]
    template = kb["templates"][primary["template"]] if primary else None
    pages = [{"kind": "case", "id": c["id"], "title": c["title"], "url": c["page"]} for c in cases[:3]]
    pages += [{"kind": "family", "id": r["family"], "title": r["title"], "url": r["page"]} for r in ranking[:3]]
    if template:
        pages.append({"kind": "template", "id": template["id"], "title": template["title"], "url": template["page"]})
    top = ranking[0]["family"] if ranking else ""
    failing = [f for f in frames if not f["torch"] and f["source"]]
    # Honest when thin: with nothing beyond the message, the ranking is the catalogue's order,
    # and the next step is what tells the families apart, not the top family's fix.
    thin = not evidence_out
    if primary is None:
        nxt = kb["clean"]["no_error_next"] if frames else ""
    elif thin:
        nxt = template["decide"]
    else:
        nxt = kb["next_steps"].get(top, template["next_step"])
    return {
        "template": primary["template"] if primary else None,
        "title": template["title"] if template else "",
        "meaning": template["meaning"] if template else "",
        "families": [r["family"] for r in ranking],
        "cases": [c["slug"] for c in cases],
        "evidence": evidence_out,
        "exception": primary["exception"] if primary else "",
        "message": primary["message"] if primary else "",
        "op": primary["op"] if primary else "",
        "op_base": primary["op_base"] if primary else "",
        "wrapper": primary["wrapper"] if primary else "",
        "argument": primary["argument"] if primary else "",
        "devices": primary["devices"] if primary else [],
        "common_device": primary["common_device"] if primary else "",
        "argument_device": primary["argument_device"] if primary else "",
        "signature": signature_text(primary) if primary else "",
        "form": primary["form"] if primary else "",
        "era": primary["versions"] if primary else "",
        "torch_range": primary["torch_range"] if primary else "",
        "torch_version": _torch_version(region, kb),
        "line": primary["line"] if primary else None,
        "errors": [_public_error(e, kb) for e in errors],
        "ranking": ranking,
        "case_ranking": cases,
        "pages": pages,
        "thin": thin,
        "next": nxt,
        "next_step": kb["next_steps"].get(top, template["next_step"] if template else ""),
        "template_next_step": template["next_step"] if template else "",
        "traceback": {
            "frames": len(frames),
            "failing": [f["source"] for f in failing[-kb["frames"]["failing_frames"] :]],
            "libraries": sorted({f["lib"].split("/")[0] for f in frames if f["lib"]}),
        },
    }


def _public_error(e: dict, kb: dict) -> dict:
    keys = (
        "template", "form", "versions", "torch_range", "exception", "exception_printed", "message",
        "wrapper", "op", "op_base", "argument", "argnum", "devices", "common_device",
        "argument_device", "line", "count",
    )
    out = {k: e[k] for k in keys}
    # an id never goes out without its title
    out["title"] = kb["templates"].get(e["template"], {}).get("title", "")
    return out
