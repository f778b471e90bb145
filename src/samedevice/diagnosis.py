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
        return _describe(exc, docs=docs)
    except Exception as e:  # the diagnosis must never hide the user's own error
        return f"samedevice: no diagnosis ({type(e).__name__}: {e})\n"


def _describe(exc: BaseException, *, docs: bool) -> str:
    facts = _facts(exc)
    if facts is None:
        return ""
    kb = facts.pop("_kb")
    frames = _user_frames(exc.__traceback__)
    out = [f"samedevice: {facts['template']} {facts['title']}"]
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
        rows = []
        for role, node in diag.operand_nodes:
            ok, value = _lookup(node, frame)
            device = _device(value) if ok else ""
            if device:
                rows.append((_text(node), role, device))
        if not rows and diag.culprit is None:
            continue
        out.append(f"  at {diag.path}:{diag.line} in {diag.function or '<module>'}: {diag.statement}")
        for name, role, device in rows:
            out.append(f"    {name:<32} {device:<10} ({role})")
        if diag.culprit is not None:
            c = diag.culprit
            out.append(f"  culprit: {c.expr}, made at {c.made_at}")
            out.append(f"  why: {c.why}")
            out.append(f"  fix: {c.fix}")
            family = c.family
        else:
            out.append(f"  still open: {diag.open}")
            family = facts["families"][0] if facts["families"] else ""
        if family:
            fam = kb["families"].get(family, {"title": family, "page": f"families/{family.lower()}/"})
            line = f"  family: {family} {fam['title']}"
            if docs:
                from samedevice.docs_url import page_url

                line += f"  {page_url(fam['page'])}"
            out.append(line)
        return "\n".join(out) + "\n"
    return ""


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


def print_diagnosis(exc: BaseException) -> None:
    text = describe(exc)
    if text:
        sys.stderr.write(text)
        sys.stderr.flush()
