"""The diagnosis printed after a device error in a live program (``samedevice run``, the pytest
plugin): each operand of the failing statement by its source name and its device, read from
the failing frame, and the culprit with where it was made, why and the fix.

The message is read by explain's engine (template, op, argument, devices); the statement and
the origins by :mod:`samedevice.analysis.culprit` -- the same analysis ``explain`` runs on a
paste's files. Only the live values are new here: operands are looked up in the frame as names
and attribute chains (``self._center.value``), never evaluated as code, and a module operand
reports where its parameters are. Nothing here imports torch: a value's device is its
``.device``.
"""

from __future__ import annotations

import ast
import json
import linecache
import os
import sys
from types import FrameType, TracebackType
from typing import Any

from samedevice.analysis.culprit import diagnose
from samedevice.analysis.reading import library_path
from samedevice.analysis.source import SourceFile

_INTERNAL = ("/torch/", "/samedevice/", "<frozen", "/site-packages/torch", "/_pytest/", "/pluggy/")


def _user_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    frames = []
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if not any(part in name for part in _INTERNAL):
            frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _facts(exc: BaseException) -> dict | None:
    from samedevice.explain.cache import knowledge
    from samedevice.explain.engine import explain_text

    text = f"{type(exc).__name__}: {exc}"
    kb = knowledge()
    result = explain_text(text[:20000], kb)
    if result["template"] is None:
        return None
    result["_kb"] = kb
    return result


def _lookup(expr: ast.AST, frame: FrameType) -> tuple[bool, Any]:
    """The value of a name or an attribute/constant-subscript chain in the frame."""
    if isinstance(expr, ast.Name):
        for scope in (frame.f_locals, frame.f_globals):
            if expr.id in scope:
                return True, scope[expr.id]
        return False, None
    if isinstance(expr, ast.Attribute):
        ok, base = _lookup(expr.value, frame)
        if not ok:
            return False, None
        try:
            return True, getattr(base, expr.attr)
        except Exception:  # a property that raises: unknown, not an error of ours
            return False, None
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        ok, base = _lookup(expr.value, frame)
        if not ok:
            return False, None
        try:
            return True, base[expr.slice.value]
        except Exception:
            return False, None
    return False, None


def _device(value: Any) -> str:
    dev = getattr(value, "device", None)
    if dev is not None and not callable(dev):
        return str(dev)
    params = getattr(value, "parameters", None)
    if callable(params):  # a module: where its parameters are
        try:
            devices = sorted({str(p.device) for p in params()})
        except Exception:
            return ""
        return ", ".join(devices) if devices else "no parameters"
    return ""


def describe(exc: BaseException, *, docs: bool = True) -> str:
    """The diagnosis text, or "" when the error is no device error or nothing can be said."""
    try:
        found = diagnosis_of(exc)
    except Exception as e:  # the diagnosis must never hide the user's own error
        return f"samedevice: no diagnosis ({type(e).__name__}: {e})\n"
    return render(found, docs=docs) if found is not None else ""


def diagnosis_of(exc: BaseException) -> dict | None:
    """What the live program shows about a device error, as one record (``render`` prints it;
    ``samedevice run --diagnosis-json FILE`` writes it): the template, the failing statement, each
    operand with its device, the culprit or what is still open, and the family."""
    facts = _facts(exc)
    if facts is None:
        return None
    kb = facts.pop("_kb")
    frames = _user_frames(exc.__traceback__)
    for frame, lineno in reversed(frames[-6:]):
        path = frame.f_code.co_filename
        text = "".join(linecache.getlines(path))
        if not text:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        src = SourceFile(tree, path, text)
        diag = diagnose(src, lineno, facts, path=_short(path))
        if diag is None:
            continue
        operands = []
        for role, node in diag.operand_nodes:
            ok, value = _lookup(node, frame)
            device = _device(value) if ok else ""
            if device:
                operands.append({"expr": _text(node), "role": role, "device": device})
        if not operands and diag.culprit is None:
            continue
        c = diag.culprit
        family = c.family if c is not None else (facts["families"][0] if facts["families"] else "")
        fam = kb["families"].get(family, {"title": family, "page": f"families/{family.lower()}/"}) if family else None
        return {
            "template": facts["template"], "template_title": facts["title"],
            "path": diag.path, "line": diag.line, "function": diag.function or "<module>",
            "statement": diag.statement, "operands": operands,
            "culprit": None if c is None else {"expr": c.expr, "role": c.role, "made_at": c.made_at,
                                               "kind": c.kind, "why": c.why, "fix": c.fix},
            "open": "" if c is not None else diag.open,
            "family": family, "family_title": fam["title"] if fam else "", "family_page": fam["page"] if fam else "",
        }
    return None


def render(d: dict, *, docs: bool = True) -> str:
    out = [f"samedevice: {d['template']} {d['template_title']}",
           f"  at {d['path']}:{d['line']} in {d['function']}: {d['statement']}"]
    for o in d["operands"]:
        out.append(f"    {o['expr']:<32} {o['device']:<10} ({o['role']})")
    c = d["culprit"]
    if c is not None:
        out.append(f"  culprit: {c['expr']}, made at {c['made_at']}")
        out.append(f"  why: {c['why']}")
        out.append(f"  fix: {c['fix']}")
    else:
        out.append(f"  still open: {d['open']}")
    if d["family"]:
        line = f"  family: {d['family']} {d['family_title']}"
        if docs:
            from samedevice.docs_url import page_url

            line += f"  {page_url(d['family_page'])}"
        out.append(line)
    return "\n".join(out) + "\n"


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except RecursionError:
        return "<expression>"


def _short(path: str) -> str:
    norm = library_path(path)
    if norm != path.replace("\\", "/"):
        return norm
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return norm
    return rel if not rel.startswith("..") else norm


def print_diagnosis(exc: BaseException, json_path: str | None = None) -> None:
    """After the traceback, on stderr; and, for a tool reading it, as JSON into ``json_path``."""
    try:
        found = diagnosis_of(exc)
    except Exception as e:  # the diagnosis must never hide the user's own error
        sys.stderr.write(f"samedevice: no diagnosis ({type(e).__name__}: {e})\n")
        return
    if found is None:
        return
    sys.stderr.write(render(found))
    sys.stderr.flush()
    if json_path:
        try:
            with open(json_path, "w", encoding="utf-8") as f:
                json.dump(found, f, indent=2)
        except OSError as e:
            sys.stderr.write(f"samedevice: could not write the diagnosis to {json_path} ({e.strerror or e})\n")
