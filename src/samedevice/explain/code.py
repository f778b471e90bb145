"""explain reads the code: the files a traceback names, when they are on this disk (or under a
``--source`` checkout), give the failing statement and its culprit.

The frames are read from the innermost outwards, PyTorch's own frames skipped: the first frame
whose statement names a culprit gives the answer (a library's ``forward`` names the layer
input, the user's training loop names the batch that was never moved). The analysis is
:mod:`samedevice.analysis.culprit`, the one ``check`` and ``run`` use.
"""

from __future__ import annotations

import sys
from pathlib import Path

from samedevice.analysis.culprit import Diagnosis, diagnose, diagnose_caller, locate_line
from samedevice.analysis.project import Project
from samedevice.analysis.reading import library_path, read_source, resolve
from samedevice.analysis.source import SourceFile

# A culprit at the statement the traceback names decides the family. One found by scanning the
# checkout for where the message could have happened is shown as a place to look and does not
# move the ranking: on the tune half of benchmarks/explain_withcode.py every weight above 0 cost
# family top-1 (weight 2: 52/92, 5: 47/96, 0: 60/96 against 59/96 for the paste alone).
FRAME_WEIGHT = 100.0
SCAN_WEIGHT = 0.0
# ... except where the message names the very operation the place performs: a T10 paste says
# `torch.load` restored onto a missing CUDA device, and a `torch.load` of the checkout without
# `map_location` is that call; the fix it needs (map_location) is F7 by the dev set's convention.
# Tune half, first wave: 3 records labelled F7 gain top-1, 1 labelled F10 loses it.
SCAN_KIND_WEIGHT = {("T10", "torch-load-no-map-location"): 3.0}
MAX_FRAMES = 6  # frames read, innermost first: the culprit is near the failing line or not here


def read_code(result: dict, source_dirs: list[Path], *, local: bool = True) -> dict:
    """``{"diagnosis": {...} | None, "notes": [...], "read": [...]}`` for one explained paste."""
    frames = [f for f in result.get("frame_list", []) if not f["torch"] and f["lineno"] > 0]
    facts = {k: result.get(k) for k in ("template", "op", "op_base", "argument", "argument_device",
                                        "devices", "common_device", "message")}
    notes: list[str] = []
    read: list[str] = []
    first: Diagnosis | None = None
    parsed: dict[str, SourceFile | str] = {}
    project = Project(list(source_dirs))
    callee: Diagnosis | None = None  # the inner frame whose operands were its parameters
    for frame in reversed(frames[-MAX_FRAMES:]):
        local_path = resolve(frame["path"], source_dirs, local=local)
        if local_path is None and local and frame.get("lib"):
            # a library the traceback ran through, installed here too (another machine's paste)
            local_path = resolve(frame["lib"], installed_roots(), local=False)
        if local_path is None:
            callee = None
            continue
        key = str(local_path)
        if key not in parsed:
            source = read_source(local_path, frame["path"])
            parsed[key] = source if isinstance(source, str) else \
                SourceFile(source.tree, frame["path"], source.text, local=local_path)
        src = parsed[key]
        if isinstance(src, str):
            if src not in notes:
                notes.append(src)
            callee = None
            continue
        shown = library_path(frame["path"])
        try:
            line = locate_line(src, frame["lineno"], frame.get("source") or "")
            diag = None
            if callee is not None:
                diag = diagnose_caller(src, line, facts, callee, path=shown, project=project)
                if diag is not None and diag.culprit is None:
                    diag = None
            if diag is None:
                diag = diagnose(src, line, facts, path=shown, project=project)
        except RecursionError:
            notes.append(f"{frame['path']}: skipped, too deeply nested to analyse")
            continue
        except Exception as e:  # an analysis gap costs the culprit, never the answer
            notes.append(f"{frame['path']}:{frame['lineno']}: not analysed ({type(e).__name__})")
            continue
        if diag is None:
            notes.append(f"{frame['path']}:{frame['lineno']}: no statement at that line "
                         "(the file here differs from the one that ran)")
            callee = None
            continue
        if line != frame["lineno"]:
            notes.append(f"{frame['path']}: the code the traceback shows at line {frame['lineno']} "
                         f"is at line {line} here (another version of the file)")
        read += diag.read
        if first is None:
            first = diag
        if diag.culprit is not None:
            notes += [n for n in project.notes if n not in notes][:3]
            return {"diagnosis": diag.to_dict(), "notes": notes, "read": read}
        callee = diag if diag.parameters else None
    notes += [n for n in project.notes if n not in notes][:3]
    if first is None and source_dirs:
        scanned = _scan(source_dirs, facts, notes, frozenset(result.get("paste_words") or ()))
        if scanned is not None:
            return {"diagnosis": scanned, "notes": notes, "read": read}
    if first is None and not frames:
        notes.append("the paste names no source line (no traceback frames with a file and line)")
    elif first is None and not notes:
        notes.append("none of the files the traceback names is on this machine "
                      "(--source DIR maps them onto a checkout)")
    return {"diagnosis": first.to_dict() if first else None, "notes": notes, "read": read}


def installed_roots() -> list[Path]:
    """This interpreter's site-packages folders: where an installed library's files are."""
    import site

    roots = [*site.getsitepackages(), site.getusersitepackages()]
    return [Path(r) for r in dict.fromkeys(roots) if r and Path(r).is_dir()]


def _progress(done: int, total: int) -> None:
    """A line on a terminal's stderr while a checkout is read (never into a pipe or the JSON)."""
    if not sys.stderr.isatty() or total < 50:
        return
    if done % 25 == 0 or done == total:
        end = "\n" if done == total else ""
        print(f"\rsamedevice explain: read {done}/{total} files of the checkout", end=end,
              file=sys.stderr, flush=True)


def _scan(source_dirs: list[Path], facts: dict, notes: list[str], named: frozenset[str]) -> dict | None:
    """No frame of the paste was read: rank the places in the checkout where it can happen."""
    from samedevice.analysis.scan import scan

    candidates, scan_notes = scan(source_dirs, facts, named=named, progress=_progress)
    notes += scan_notes[:3]
    if not candidates:
        notes.append("the paste names no line of this checkout, and no statement in it where the "
                     "message's operation meets a value made on the CPU")
        return None
    best = candidates[0]
    c = best.culprit
    return {
        "path": best.path, "line": best.line, "end_line": best.end_line, "statement": best.statement,
        "function": best.function, "class": "", "operands": [], "read": [], "open": "",
        "located_by": "scan",
        "culprit": {"expr": c.expr, "role": c.role, "made_at": c.made_at, "kind": c.kind,
                    "family": c.family, "why": c.why, "fix": c.fix, "chain": c.chain},
        "candidates": [{"at": f"{x.path}:{x.line}", "statement": x.statement, "expr": x.culprit.expr,
                        "made_at": x.culprit.made_at, "kind": x.culprit.kind, "family": x.culprit.family}
                       for x in candidates],
    }


def apply(result: dict, code: dict, kb: dict) -> None:
    """Put what the code shows into the answer: the culprit's family first, with its evidence."""
    result["code"] = code
    diag = code.get("diagnosis")
    culprit = (diag or {}).get("culprit")
    result["culprit"] = None
    if not culprit:
        return
    result["culprit"] = {"expr": culprit["expr"], "made_at": culprit["made_at"], "why": culprit["why"],
                         "fix": culprit["fix"], "family": culprit["family"], "kind": culprit["kind"],
                         "statement": f"{diag['path']}:{diag['line']}  {diag['statement']}"}
    family = culprit["family"]
    scanned = diag.get("located_by") == "scan"
    weight = SCAN_KIND_WEIGHT.get((result.get("template"), culprit["kind"]), SCAN_WEIGHT) if scanned else FRAME_WEIGHT
    result["culprit"]["located_by"] = "scan" if scanned else "traceback"
    if scanned:
        result["culprit"]["candidates"] = diag["candidates"]
    evidence = {
        "rule": "source-culprit",
        "where": "code",
        "family": family,
        "families": {family: weight},
        "match": culprit["expr"],
        "line": None,
        "at": culprit["made_at"].split("  ", 1)[0],
        "why": f"`{culprit['expr']}` in `{diag['statement'][:80]}` ({diag['path']}:{diag['line']}) "
               f"was made at {culprit['made_at']}: {culprit['why']}",
    }
    if scanned and weight <= 0:
        return  # a place to look, not evidence for a family
    result["evidence"].insert(0, evidence)
    ranking = {r["family"]: r for r in result.get("ranking", [])}
    fam = kb["families"].get(family, {"title": family, "page": f"families/{family.lower()}/"})
    top = ranking.get(family) or {"family": family, "title": fam["title"], "page": fam["page"], "score": 0.0}
    top = {**top, "score": top.get("score", 0.0) + weight}
    rest = [r for r in result.get("ranking", []) if r["family"] != family]
    # the traceback's own statement decides; a scanned place is one more piece of evidence
    result["ranking"] = sorted([top, *rest], key=lambda r: -r.get("score", 0.0))
    result["families"] = [r["family"] for r in result["ranking"]]
    pages = [p for p in result.get("pages", []) if not (p["kind"] == "family" and p["id"] == family)]
    first_family = next((i for i, p in enumerate(pages) if p["kind"] == "family"), len(pages))
    pages.insert(first_family, {"kind": "family", "id": family, "title": top["title"], "url": top["page"]})
    result["pages"] = pages
    result["thin"] = result["thin"] and scanned
