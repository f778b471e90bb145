"""Evidence for root-cause families: every rule in rules.toml, over the template's tie-break prior.

Each rule fires at most once and adds its weights to the families it names. The evidence list
keeps what fired and where (the paste line), so the user sees *why* a family ranks where it does.
"""

from __future__ import annotations

from samedevice.explain.dialect import ascii_lower, compiled


def collect(primary: dict | None, frames: list[dict], context: str, context_start: int, kb: dict) -> tuple[list[dict], dict[str, float]]:
    """Evidence items (in rule order) and the family scores they add up to."""
    scores: dict[str, float] = {}
    evidence: list[dict] = []
    if primary is not None:
        # The template's catalogue order only breaks ties: it is background, not a finding, so
        # it is kept out of the evidence (a paste with nothing else says so, see engine.py).
        prior = kb["scoring"]["prior"]
        for rank, family in enumerate(primary["families"]):
            if rank < len(prior):
                scores[family] = scores.get(family, 0.0) + prior[rank]

    template = primary["template"] if primary else None
    failing = failing_frames(frames, primary, kb)
    context_low: str | None = None  # lower-cased once, for the text rules' literal test
    for rule in kb["rules"]:
        # without an error line (a paste cut before its last line) any template may follow
        if rule.get("templates") and template is not None and template not in rule["templates"]:
            continue
        where = rule["where"]
        if where == "signature":
            if primary is not None and _signature_matches(rule, primary):
                _fire(scores, evidence, rule, signature_text(primary), primary["line"], None, 1.0)
        elif where == "source":
            _source_rule(rule, frames, failing, scores, evidence, kb)
        elif where == "frame":
            _frame_rule(rule, frames, scores, evidence)
        elif where == "text":
            # a text rule with `when` reads the prose only beside an error of that shape
            if "when" in rule and (primary is None or not _signature_matches(rule, primary)):
                continue
            if context_low is None:
                context_low = ascii_lower(context)
            if all(any(w in context_low for w in words) for words in rule.get("needle_sets", ())):
                _text_rule(rule, context, context_start, scores, evidence)
    return evidence, scores


def failing_frames(frames: list[dict], primary: dict | None, kb: dict) -> list[dict]:
    """The innermost non-PyTorch frames with a source line: the user's (or library's) failing code."""
    own = [f for f in frames if not f["torch"] and f["source"]]
    if primary is not None:
        before = [f for f in own if f["line"] < primary["line"] - 1]
        if before:
            own = before
    return own[-kb["frames"]["failing_frames"] :]


def signature_text(error: dict) -> str:
    """A one-line rendering of what the message says: op, argument and devices."""
    parts = []
    if error["wrapper"]:
        parts.append(error["wrapper"])
    if error["argument"]:
        parts.append(f"argument {error['argument']}")
    if error["argument_device"]:
        parts.append(f"on {error['argument_device']}")
    if error["common_device"]:
        parts.append(f"(others on {error['common_device']})")
    if not parts and error["devices"]:
        parts.append(" and ".join(error["devices"]))
    return " ".join(parts) or error["template"]


def _field(error: dict, name: str) -> str:
    value = error.get(name)
    if isinstance(value, str):
        return value
    return error["fields"].get(name, "")


def _signature_matches(rule: dict, error: dict) -> bool:
    for name, pattern in rule["when"].items():
        value = _field(error, name)
        if name == "op":
            # an op rule matches the op as printed or its base name (clamp_Tensor / clamp)
            if not (compiled(pattern).search(value) or compiled(pattern).search(error["op_base"])):
                return False
        elif not compiled(pattern).search(value):
            return False
    return True


def _source_rule(rule: dict, frames: list[dict], failing: list[dict], scores, evidence, kb) -> None:
    factor = kb["scoring"]["source_any_factor"]
    # the innermost failing line is where the culprit is; each frame further out counts less
    # (`loss = loss_fn(model(x), y)` is the caller of `self.w * (pred - target)`, not the cause)
    decay = kb["scoring"]["source_depth_decay"]
    candidates = [(f, decay**depth) for depth, f in enumerate(reversed(failing))]
    if rule.get("scope") == "any":
        chosen = {id(f) for f in failing}
        candidates += [(f, factor) for f in reversed(frames) if not f["torch"] and f["source"] and id(f) not in chosen]
    for frame, weight in candidates:
        if rule.get("func") and not compiled(rule["func"]).search(frame["func"]):
            continue
        m = compiled(rule["regex"]).search(frame["source"])
        if not m:
            continue
        if rule.get("also") and not compiled(rule["also"]).search(frame["source"]):
            continue
        if rule.get("unless") and compiled(rule["unless"]).search(frame["source"]):
            continue
        _fire(scores, evidence, rule, frame["source"], frame["source_line"] + 1, None, weight, _at(frame))
        return


def _frame_rule(rule: dict, frames: list[dict], scores, evidence) -> None:
    for frame in reversed(frames):
        m = compiled(rule["regex"]).search(frame["path"])
        if not m:
            continue
        if rule.get("func") and not compiled(rule["func"]).search(frame["func"]):
            continue
        if rule.get("unless") and compiled(rule["unless"]).search(frame["path"]):
            continue
        _fire(scores, evidence, rule, frame["lib"] or frame["path"], frame["line"] + 1, None, 1.0, _at(frame))
        return


def _text_rule(rule: dict, context: str, context_start: int, scores, evidence) -> None:
    for m in compiled(rule["regex"]).finditer(context):
        if rule.get("unless") and compiled(rule["unless"]).search(m.group(0)):
            continue
        line = context_start + context.count("\n", 0, m.start()) + 1
        _fire(scores, evidence, rule, m.group(0).strip(" "), line, None, 1.0)
        return


def _at(frame: dict) -> str:
    """The user's file and line a frame names (what they open), not the paste's line number."""
    return f"{frame['lib'] or frame['path']}:{frame['lineno']}" if frame["lineno"] > 0 else ""


def _fire(scores, evidence, rule: dict, match: str, line: int, why: str | None, factor: float,
          at: str = "") -> None:
    weights = {}
    for family, weight in rule["families"].items():
        w = weight * factor
        weights[family] = w
        scores[family] = scores.get(family, 0.0) + w
    shown = match if len(match) <= 160 else match[:157] + "..."
    evidence.append(
        {
            "rule": rule["id"],
            "where": rule["where"],
            "families": weights,
            "match": shown,
            "line": line,
            "at": at,
            "why": why if why is not None else rule["why"].replace("{match}", shown),
        }
    )
