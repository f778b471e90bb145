"""Find the device-error messages in cleaned lines and read their fields.

Two passes keep a 10 MB paste fast and a wrapped message readable:

1. anchors (short phrases, run once over the lower-cased paste) say which lines to read;
2. for each such line, a window of up to ``window_lines`` lines is joined twice: *soft* (a space
   at every line break: the terminal wrapped at a space) and *hard* (no space where neither side
   had whitespace: the terminal cut a word). Every catalogue form is tried on both; the reading
   that starts on the earliest line, is not a truncated shape, and extracts the most fields wins.

The browser implements the same algorithm from the same data (docs/javascripts/explain.js).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator

from samedevice.explain.dialect import ascii_lower, collapse, compiled, compiled_exact_case


def find_errors(lines: list[str], kb: dict) -> list[dict]:
    """Every distinct device error in the paste, in the order they appear."""
    text = "\n".join(lines)
    anchor = compiled_exact_case(kb["messages"]["anchor"])
    hit_lines: list[int] = []
    line = 0
    pos = 0
    low = text.lower()
    for m in anchor_matches(anchor, low, kb["messages"].get("anchor_plan")):
        line += low.count("\n", pos, m.start())
        pos = m.start()
        if not hit_lines or hit_lines[-1] != line:
            hit_lines.append(line)
            if len(hit_lines) >= kb["messages"]["max_windows"]:
                break

    errors: list[dict] = []
    _read_hits(hit_lines, lines, kb, errors, {})
    if "\n" in low and all(e["partial"] for e in errors):
        # A terminal that wraps at a fixed width cuts words ("to be on t" / "he same device"), and
        # no anchor crosses such a cut: a paste where nothing, or only a truncated shape (the tail
        # after the cut), was found is searched once more with its line breaks removed. The window
        # readers already join cut words (the hard join); read from the new lines too.
        tried = set(hit_lines)
        extra = [k for k in _joined_hits(low, anchor, kb["messages"]["max_windows"], kb["messages"].get("anchor_plan"))
                 if k not in tried]
        if extra:
            errors = []
            _read_hits(sorted(tried.union(extra))[: kb["messages"]["max_windows"]], lines, kb, errors, {})
    return errors


# Below this size one pass of the whole alternation is quicker than the plan's set-up.
_PLAN_FROM = 100_000
_CHUNK = 1 << 20


def _vocabulary(low: str) -> str:
    """Every distinct whitespace-separated token of ``low``, one per line. A word without
    whitespace occurs in the paste exactly when it occurs here, and a 10 MB traceback, which
    repeats its frames, has a few thousand distinct tokens: asking it costs microseconds where
    the paste costs milliseconds a word. Read in chunks cut at line breaks, so the token lists
    stay small."""
    tokens: set[str] = set()
    at = 0
    while at < len(low):
        cut = low.find("\n", at + _CHUNK)
        cut = len(low) if cut < 0 else cut
        tokens.update(low[at:cut].split())
        at = cut
    return "\n".join(tokens)


def anchor_matches(anchor: re.Pattern[str], low: str, plan: dict | None) -> Iterator[re.Match[str]]:
    """``anchor.finditer(low)``, the same matches, in a long paste without running the
    alternation at every character: Python's regex engine tries each of ~190 alternatives at
    each position (10 MB took 4.5 s). Every match of an alternative contains a word of each of
    its sets (catalogue.anchor_plan): an alternative with a set none of whose words is in the
    paste cannot match, and the others need the alternation only within ``width`` characters of
    their rarest set's words. The browser's engine compiles the alternation well and needs none."""
    if plan is None or len(low) < _PLAN_FROM:
        yield from anchor.finditer(low)
        return
    vocabulary = _vocabulary(low)
    seen: dict[str, int] = {}

    def spread(word: str) -> int:
        """How many distinct tokens hold ``word`` (0: not in the paste): a guess at its count."""
        if word not in seen:
            seen[word] = vocabulary.count(word) if not any(c.isspace() for c in word) else len(low)
        return seen[word]

    chosen: set[str] = set()
    for sets in plan["needles"]:
        words = min(sets, key=lambda words: sum(map(spread, words)))
        chosen.update(w for w in words if spread(w))
    # a match ending at the window's edge would see it as the paste's end: one more character
    reach = plan["width"] + 1
    starts: list[int] = []
    for word in chosen:
        at = low.find(word)
        while at >= 0:
            starts.append(at)
            at = low.find(word, at + 1)
    starts.sort()
    begin = end = -1
    for at in starts:
        if at - reach > end:
            if end >= 0:
                yield from anchor.finditer(low, begin, end)
            begin = max(0, at - reach)
        end = min(len(low), at + reach + 64)  # 64: longer than any word of the plan
    if end >= 0:
        yield from anchor.finditer(low, begin, end)


def _read_hits(hit_lines: list[int], lines: list[str], kb: dict, errors: list[dict], by_key: dict) -> None:
    consumed = -1
    line_words: dict[int, frozenset[str]] = {}
    for first in hit_lines:
        if first <= consumed:
            continue
        found = read_window(lines, first, kb, line_words)
        if found is None:
            continue
        error, last = found
        consumed = last
        # 0-based, inclusive: the lines the message occupies, and the text before it on the first
        span = [error["line"] - 1, last, error.pop("lead")]
        key = (error["template"], error["form"], error["op"], error["argument"], tuple(error["devices"]))
        if key in by_key:
            by_key[key]["count"] += 1
            by_key[key]["spans"].append(span)
            continue
        if len(errors) >= kb["clean"]["max_messages"]:
            continue
        error["spans"] = [span]
        by_key[key] = error
        errors.append(error)


def _joined_hits(low: str, anchor, limit: int, plan: dict | None) -> list[int]:
    """Lines where an anchor starts in the paste with every line break removed."""
    # shifted[i]: where the text after the i-th line break starts once the breaks are removed
    shifted = []
    at = low.find("\n")
    while at >= 0:
        shifted.append(at - len(shifted))
        at = low.find("\n", at + 1)
    hits: list[int] = []
    for m in anchor_matches(anchor, low.replace("\n", ""), plan):
        line = bisect.bisect_right(shifted, m.start())
        if not hits or hits[-1] != line:
            hits.append(line)
            if len(hits) >= limit:
                break
    return hits


# The whitespace a terminal leaves at a wrap (after cleaning; "" is not in it: an empty edge
# means the line ended or began with a character).
_SPACES = (" ", "\t", "\f", "\v")


def _join(window: list[str], hard: bool) -> tuple[str, list[int]]:
    """Join window lines (whitespace collapsed); return the text and where each line starts."""
    out = collapse(window[0]).strip(" ")
    starts = [0]
    for prev, nxt in itertools.pairwise(window):
        glue = " "
        if hard and prev[-1:] not in _SPACES and nxt[:1] not in _SPACES:
            glue = ""  # the terminal cut a word: "map_locatio" + "n=torch..."
        out += glue
        starts.append(len(out))
        out += collapse(nxt).strip(" ")
    return out, starts


def _line_of(offset: int, starts: list[int]) -> int:
    k = 0
    for i, s in enumerate(starts):
        if s <= offset:
            k = i
    return k


def _window_words(lines: list[str], first: int, count: int, lowered: list[str], starts: list[list[int]],
                  kb: dict, line_words: dict[int, frozenset[str]]) -> list[frozenset[str]]:
    """The forms' needle words (``kb["window_words"]``) each reading of a window holds. A word is
    in a joined reading when it is in one of its lines, or crosses a join: each line is asked
    once per paste (``line_words``), not once per window it is in and per form, which made a
    paste of long lines spend seconds asking the same lines for the same words."""
    words = kb["window_words"]
    cfg = kb["clean"]
    held: set[str] = set()
    for j in range(first, first + count):
        if j not in line_words:
            piece = ascii_lower(collapse(lines[j][: cfg["max_line"]]).strip(" "))
            line_words[j] = frozenset(w for w in words if w in piece)
        held |= line_words[j]
    reach = max(map(len, words), default=1)
    out = []
    for low, at in zip(lowered, starts, strict=True):
        joins = "\0".join(low[max(0, s - reach): s + reach] for s in at[1:])
        out.append(frozenset(held.union(w for w in words if w in joins)) if joins else frozenset(held))
    return out


def _search(form: dict, low: str, has: frozenset[str]) -> re.Match[str] | None:
    """``re.search(form["regex"], low)``. A form that is one alternation runs only the branches
    whose words the window holds (a branch without them cannot match) and keeps the leftmost
    match, the earlier branch on a tie: what the whole alternation finds."""
    if not form.get("branches"):
        return compiled_exact_case(form["regex"]).search(low)
    best = None
    for branch in form["branches"]:
        if not all(any(n in has for n in words) for words in branch["needle_sets"]):
            continue
        m = compiled_exact_case(branch["regex"]).search(low)
        if m is not None and (best is None or m.start() < best.start()):
            best = m
    return best


def read_window(lines: list[str], first: int, kb: dict,
                line_words: dict[int, frozenset[str]] | None = None) -> tuple[dict, int] | None:
    """The best reading of the message starting at line ``first``, and its last line
    (``line_words``: the needle words of each line read so far in this paste)."""
    line_words = {} if line_words is None else line_words
    cfg = kb["clean"]
    boundary = compiled(cfg["boundary"])
    window = [lines[first][: cfg["max_line"]]]
    for j in range(first + 1, min(len(lines), first + cfg["window_lines"])):
        if boundary.match(lines[j]):
            break
        window.append(lines[j][: cfg["max_line"]])
    soft = _join(window, hard=False)
    hard = _join(window, hard=True)
    variants = [soft] if hard[0] == soft[0] else [soft, hard]

    lowered = [ascii_lower(text) for text, _ in variants]
    holds = _window_words(lines, first, len(window), lowered, [starts for _, starts in variants], kb, line_words)
    best = None
    for order, form in enumerate(kb["forms"]):
        # a cheap literal test first: compiling every form would dominate a cold start
        if not any(all(any(n in has for n in words) for words in form["needle_sets"])
                   and all(n in has for n in form["needles"]) for has in holds):
            continue
        for v, (text, starts) in enumerate(variants):
            m = _search(form, lowered[v], holds[v])
            if not m:
                continue
            # matched on the lower-cased text; read the fields from the text as printed
            fields = {k: text[m.start(k) : m.end(k)] for k, val in m.groupdict().items() if val}
            devices = [device_of(fields[g], kb) for g in form.get("devices", []) if g in fields]
            # the same text shape reports a dtype mismatch (two types of one device): not a device
            # error. Compared as printed: a check that prints `cpu:0` against `cpu` failed on them
            if form.get("distinct") and (len(devices) < 2 or devices[0] == devices[1]):
                continue
            k = _line_of(m.start(), starts)
            # any named form over the last-resort one (its words, "different devices", often come
            # first on a line that retells the real message), then the earliest start (line, then
            # column: the same in both joins), a full shape over a truncated one, the most fields,
            # the soft join, catalogue order
            key = (1 if form.get("fallback") else 0, k, m.start() - starts[k], 1 if form.get("partial") else 0, -len(fields), v, order)
            if best is None or key < best[0]:
                best = (key, form, m, text, starts, fields, devices)
    if best is None:
        return None
    _, form, m, text, starts, fields, devices = best
    error = _error(form, fields, devices, text[max(0, m.start() - 200) : m.start()], text[m.start() : m.end()], kb)
    k = _line_of(m.start(), starts)
    error["line"] = first + k + 1
    # what precedes the message on its first line ("FAILED test_x - RuntimeError: ") stays
    # readable as context for the text rules
    error["lead"] = text[starts[k] : m.start()]
    last = first + _line_of(max(m.start(), m.end() - 1), starts)
    return error, last


def _error(form: dict, fields: dict, devices: list[str], before: str, message: str, kb: dict) -> dict:
    template = form["template"]
    families = form.get("families") or kb["templates"][template]["families"]
    # a form with its own list knows its usual causes better than the template's report counts
    own_families = bool(form.get("families"))
    if (
        form.get("multi_accel")
        and len(devices) >= 2
        and kind_of(devices[0], kb) == "accelerator"
        and kind_of(devices[1], kb) == "accelerator"
        and not same_device(devices[0], devices[1])
    ):
        template = form["multi_accel"]
        families = kb["templates"][template]["families"]
        own_families = False
    wrapper = fields.get("wrapper", "")
    op = compiled(kb["ops"]["strip"]).sub("", wrapper, count=1) if wrapper else ""
    op_base = compiled(kb["ops"]["overload"]).sub("", op, count=1) if op else ""
    common = device_of(fields[form["common"]], kb) if form.get("common") in fields else ""
    argdev = device_of(fields[form["argdev"]], kb) if form.get("argdev") in fields else ""
    era_id, versions, torch_range = "", form["versions"], form["torch"]
    for rule in form.get("era_rules", []):
        value = fields.get(rule["field"], "")
        if value and compiled(rule["regex"]).search(value):
            era_id, versions, torch_range = rule["id"], rule["versions"], rule["torch"]
            break
    exc = compiled(kb["messages"]["exception"]).search(before)
    exception = exc.group("exc") if exc else ""
    canonical = {e.lower(): e for e in kb["messages"]["exceptions"]}
    exception = canonical.get(exception.lower(), exception)
    return {
        "template": template,
        "form": form["id"],
        "era": era_id,
        "versions": versions,
        "torch_range": torch_range,
        "exception": exception or kb["templates"][template]["exception"],
        "exception_printed": bool(exception),
        "message": message.strip(" "),
        "wrapper": wrapper,
        "op": op,
        "op_base": op_base,
        "argument": fields.get("argument", ""),
        "argnum": fields.get("argnum", ""),
        "devices": devices,
        "common_device": common,
        "argument_device": argdev,
        "common_kind": kind_of(common, kb) if common else "",
        "argdev_kind": kind_of(argdev, kb) if argdev else "",
        "accelerators": str(distinct_accelerators(devices, kb)),
        "fields": fields,
        "families": families,
        "own_families": own_families,
        "partial": bool(form.get("partial")),
        "fallback": bool(form.get("fallback")),
        "count": 1,
    }


def device_of(printed: str, kb: dict) -> str:
    """A printed device or tensor type as a device string: torch.cuda.FloatTensor -> cuda."""
    value = printed.strip(" ").lower()
    for entry in kb["devices"]["map"]:
        m = compiled(entry["regex"]).search(value)
        if m:
            return entry["device"].replace("{1}", m.group(1) or "") if m.groups() else entry["device"]
    return value


def kind_of(device: str, kb: dict) -> str:
    """cpu, meta, accelerator, or unknown (a token PyTorch does not print, e.g. one cut off)."""
    base = device.split(":")[0]
    if base in kb["devices"]["not_accelerators"]:
        return base
    return "accelerator" if base in kb["devices"]["accelerators"] else "unknown"


def distinct_accelerators(devices: list[str], kb: dict) -> int:
    """How many different accelerators the message names: 2 for cuda:0 and cuda:7 (work spread
    over GPUs), 1 for cuda and cuda:0 (the same device as far as the text can tell)."""
    seen: list[str] = []
    for d in devices:
        if kind_of(d, kb) == "accelerator" and not any(same_device(d, s) for s in seen):
            seen.append(d)
    return len(seen)


def same_device(a: str, b: str) -> bool:
    """cuda and cuda:0 name the same device as far as a message can tell; cuda:0 and cuda:1 do not."""
    if a == b:
        return True
    ta, _, ia = a.partition(":")
    tb, _, ib = b.partition(":")
    return ta == tb and (not ia or not ib)
