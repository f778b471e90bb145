"""Name the objects a user passed by what they typed: ``audit(broken.model, batch)``.

Python 3.11 records, for every bytecode instruction, the source span it came from. The call
instruction the caller is executing therefore points at the text of the ``audit(...)`` call;
parsing that text gives each positional argument's expression. Only plain references are
used as names (``model``, ``broken.model``, ``batch['x']``); anything else, or a call whose
source is not available (``python -c``), falls back to a variable in the caller bound to the
same object, then to ``arg0``, ``arg1``, ...
"""

from __future__ import annotations

import ast
import linecache
import types
from typing import Any


def argument_names(frame: types.FrameType | None, args: tuple[Any, ...]) -> list[str]:
    """Names for ``args`` as the caller in ``frame`` wrote them."""
    written = _written(frame, len(args)) if frame is not None else None
    names = []
    for i, obj in enumerate(args):
        name = written[i] if written is not None else None
        if name is None and frame is not None:
            name = _variable_for(frame, obj)
        names.append(name or f"arg{i}")
    return _unique(names)


_CACHE_SIZE = 512
_calls: dict[tuple[types.CodeType, int], ast.Call | None] = {}


def _written(frame: types.FrameType, count: int) -> list[str | None] | None:
    # ``with locate(...)`` inside a training loop parses the same call site every step:
    # a code object's source does not change, so the parse is kept per call site.
    key = (frame.f_code, frame.f_lasti)
    if key in _calls:
        call = _calls[key]
    else:
        call = _call_node(frame)
        if len(_calls) >= _CACHE_SIZE:
            _calls.clear()
        _calls[key] = call
    if call is None:
        return None
    if len(call.args) != count or any(isinstance(a, ast.Starred) for a in call.args):
        return None  # ``audit(*things)``: the text does not say which is which
    return [ast.unparse(a) if _is_reference(a) else None for a in call.args]


def _call_node(frame: types.FrameType) -> ast.Call | None:
    code = frame.f_code
    try:
        positions = list(code.co_positions())
        lineno, end_lineno, col, end_col = positions[frame.f_lasti // 2]
    except (IndexError, ValueError, AttributeError):
        return None
    if lineno is None or end_lineno is None or col is None or end_col is None:
        return None
    lines = linecache.getlines(code.co_filename, frame.f_globals)
    if not lines or end_lineno > len(lines):
        return None
    # Columns are byte offsets into UTF-8 lines.
    chunk = [line.encode("utf-8") for line in lines[lineno - 1:end_lineno]]
    if len(chunk) == 1:
        text = chunk[0][col:end_col]
    else:
        text = b"".join([chunk[0][col:], *chunk[1:-1], chunk[-1][:end_col]])
    try:
        node = ast.parse(text.decode("utf-8").strip(), mode="eval").body
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    return node if isinstance(node, ast.Call) else None


def _is_reference(node: ast.expr) -> bool:
    """``a``, ``a.b``, ``a['k']``, ``a[0]``: expressions that name an object, not compute one."""
    while True:
        if isinstance(node, ast.Name):
            return True
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            node = node.value
        else:
            return False


def _variable_for(frame: types.FrameType, obj: Any) -> str | None:
    for scope in (frame.f_locals, frame.f_globals):
        for name, value in scope.items():
            if value is obj and name.isidentifier() and not name.startswith("_"):
                return name
    return None


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out
