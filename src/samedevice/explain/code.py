"""explain reads the code: the files a traceback names, when they are on this disk (or under a
``--source`` checkout), give the failing statement and its culprit.

The frames are read from the innermost outwards, PyTorch's own frames skipped: the first frame
whose statement names a culprit gives the answer (a library's ``forward`` names the layer
input, the user's training loop names the batch that was never moved). The analysis is
:mod:`samedevice.analysis.culprit`, the one ``check`` and ``run`` use.
"""

from __future__ import annotations

from pathlib import Path

from samedevice.analysis.culprit import Diagnosis, diagnose
from samedevice.analysis.reading import SourceText, read_source, resolve
from samedevice.analysis.source import SourceFile

MAX_FRAMES = 6  # frames read, innermost first: the culprit is near the failing line or not here


def read_code(result: dict, source_dirs: list[Path], *, local: bool = True) -> dict:
    """``{"diagnosis": {...} | None, "notes": [...], "read": [...]}`` for one explained paste."""
    frames = [f for f in result.get("frame_list", []) if not f["torch"] and f["lineno"] > 0]
    facts = {k: result.get(k) for k in ("template", "op", "op_base", "argument", "argument_device",
                                        "devices", "common_device", "message")}
    notes: list[str] = []
    read: list[str] = []
    first: Diagnosis | None = None
    parsed: dict[str, SourceText | str] = {}
    for frame in reversed(frames[-MAX_FRAMES:]):
        local_path = resolve(frame["path"], source_dirs, local=local)
        if local_path is None:
            continue
        key = str(local_path)
        if key not in parsed:
            parsed[key] = read_source(local_path, frame["path"])
        source = parsed[key]
        if isinstance(source, str):
            if source not in notes:
                notes.append(source)
            continue
        try:
            src = SourceFile(source.tree, frame["path"], source.text)
            diag = diagnose(src, frame["lineno"], facts, path=_short(frame["path"]))
        except RecursionError:
            notes.append(f"{frame['path']}: skipped, too deeply nested to analyse")
            continue
        except Exception as e:  # an analysis gap costs the culprit, never the answer
            notes.append(f"{frame['path']}:{frame['lineno']}: not analysed ({type(e).__name__})")
            continue
        if diag is None:
            notes.append(f"{frame['path']}:{frame['lineno']}: no statement at that line "
                         "(the file here differs from the one that ran)")
            continue
        read += diag.read
        if first is None:
            first = diag
        if diag.culprit is not None:
            return {"diagnosis": diag.to_dict(), "notes": notes, "read": read}
    if first is None and not frames:
        notes.append("the paste names no source line (no traceback frames with a file and line)")
    elif first is None and not notes:
        notes.append("none of the files the traceback names is on this machine "
                      "(--source DIR maps them onto a checkout)")
    return {"diagnosis": first.to_dict() if first else None, "notes": notes, "read": read}


def _short(path: str) -> str:
    """The path as a user recognises it: below site-packages for a library, else as printed."""
    norm = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in norm:
            return norm.split(marker, 1)[1]
    return norm


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
    evidence = {
        "rule": "source-culprit",
        "where": "code",
        "family": family,
        "families": {family: 100.0},
        "match": culprit["expr"],
        "line": None,
        "at": culprit["made_at"].split("  ", 1)[0],
        "why": f"`{culprit['expr']}` in `{diag['statement'][:80]}` ({diag['path']}:{diag['line']}) "
               f"was made at {culprit['made_at']}: {culprit['why']}",
    }
    result["evidence"].insert(0, evidence)
    families = [family] + [f for f in result["families"] if f != family]
    result["families"] = families
    ranking = {r["family"]: r for r in result.get("ranking", [])}
    fam = kb["families"].get(family, {"title": family, "page": f"families/{family.lower()}/"})
    top = ranking.get(family) or {"family": family, "title": fam["title"], "page": fam["page"], "score": 0.0}
    top = {**top, "score": top.get("score", 0.0) + 100.0}
    result["ranking"] = [top] + [r for r in result.get("ranking", []) if r["family"] != family]
    pages = [p for p in result.get("pages", []) if not (p["kind"] == "family" and p["id"] == family)]
    first_family = next((i for i, p in enumerate(pages) if p["kind"] == "family"), len(pages))
    pages.insert(first_family, {"kind": "family", "id": family, "title": top["title"], "url": top["page"]})
    result["pages"] = pages
    result["thin"] = False
