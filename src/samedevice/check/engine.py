"""Check one source text: parse it, run every rule, drop what ``# noqa`` silences."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from dataclasses import dataclass

from samedevice.analysis import values as _values
from samedevice.analysis.source import SourceFile

from . import _modules, _order
from .registry import BY_CODE

SYNTAX_ERROR = "SD000"  # not a rule: the file could not be parsed


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    col: int  # 1-based, like Ruff and flake8
    code: str
    message: str

    @property
    def family(self) -> str:
        return BY_CODE[self.code].family if self.code in BY_CODE else ""


_CHECKS = (
    _values.check_values,
    _modules.check_classes,
    _order.check_attach_after_move,
    _order.check_batch_moves,
    _order.check_model_never_moved,
    _order.check_optimizer_order,
    _order.check_dataparallel,
    _order.check_generators,
    _order.check_load_map_location,
)
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+\d+(?:[,\s]+[A-Z]+\d+)*))?", re.I)


def _noqa_lines(text: str) -> dict[int, set[str] | None]:
    """Line -> the codes its ``# noqa`` comment names (None: every code)."""
    result: dict[int, set[str] | None] = {}
    if "noqa" not in text:
        return result
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return result
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            m = _NOQA.search(tok.string)
            if m:
                codes = m.group("codes")
                result[tok.start[0]] = ({c.upper() for c in re.split(r"[,\s]+", codes) if c}
                                        if codes else None)
    return result


def check_source(text: str, path: str = "<stdin>", select: set[str] | None = None) -> list[Finding]:
    """Every finding in one file, sorted by position. A file that does not parse gives one
    ``SD000`` finding instead of an exception."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError) as e:
        line = getattr(e, "lineno", None) or 1
        col = getattr(e, "offset", None) or 1
        msg = getattr(e, "msg", None) or str(e)
        return [Finding(path, line, col, SYNTAX_ERROR, f"cannot parse: {msg}")]
    src = SourceFile(tree, path, text)
    seen: dict[tuple[str, int, int], Finding] = {}

    def report(code: str, node: ast.AST, detail: str) -> None:
        if select is not None and code not in select:
            return
        line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
        key = (code, line, col)
        if key not in seen:
            message = BY_CODE[code].summary + (f": {detail}" if detail else "")
            seen[key] = Finding(path, line, col, code, message)

    for check in _CHECKS:
        check(src, report)
    noqa = _noqa_lines(text) if seen else {}
    out = []
    for f in seen.values():
        codes = noqa.get(f.line, set())
        if codes is None or f.code in codes:
            continue
        out.append(f)
    return sorted(out)
