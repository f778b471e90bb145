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
INTERNAL_ERROR = "SD999"  # not a rule: the checker failed on this file (exit status 2)


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    col: int  # 1-based, like Ruff and flake8
    code: str
    message: str
    cell: int = 0  # in a notebook: the cell (1-based, as Jupyter and Ruff count); 0 elsewhere

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
# A bare noqa comment silences every code on its line; "noqa" with a colon and codes (SD201, SD4)
# the codes named. A colon with no code after it names nothing (Ruff ignores such a directive):
# it silences nothing.
_NOQA = re.compile(r"#\s*noqa(?P<colon>:\s*(?P<codes>[A-Z]+\d+(?:[,\s]+[A-Z]+\d+)*)?)?", re.I)


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
                if m.group("colon") and not codes:
                    continue
                result[tok.start[0]] = ({c.upper() for c in re.split(r"[,\s]+", codes) if c}
                                        if codes else None)
    return result


def check_source(text: str, path: str = "<stdin>", select: set[str] | None = None) -> list[Finding]:
    """Every finding in one file, sorted by position. A file that does not parse gives one
    ``SD000`` finding, and one the rules fail on (a RecursionError on code nested thousands
    deep) one ``SD999`` finding, instead of an exception."""
    text = text.removeprefix("\ufeff")  # a BOM read as text (stdin)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        line = getattr(e, "lineno", None) or 1
        col = getattr(e, "offset", None) or 1
        msg = getattr(e, "msg", None) or str(e) or type(e).__name__
        return [Finding(path, line, col, SYNTAX_ERROR, f"cannot parse: {msg}")]
    try:
        return _check_tree(tree, text, path, select)
    except (RecursionError, MemoryError) as e:
        return [Finding(path, 1, 1, INTERNAL_ERROR, f"not checked: the code is nested too deep "
                                                    f"for the checker ({type(e).__name__})")]
    except Exception as e:  # a defect of a rule: this file is reported, the others still checked
        return [Finding(path, 1, 1, INTERNAL_ERROR, f"not checked: internal error {type(e).__name__}: {e}")]


def _check_tree(tree: ast.AST, text: str, path: str, select: set[str] | None) -> list[Finding]:
    src = SourceFile(tree, path, text)
    seen: dict[tuple[str, int, int], Finding] = {}
    lines: list[str] | None = None
    ascii_only = text.isascii()

    def column(line: int, byte_offset: int) -> int:
        """``ast`` columns count UTF-8 bytes; editors and Ruff count characters."""
        nonlocal lines
        if ascii_only:
            return byte_offset + 1
        if lines is None:
            lines = text.splitlines()
        if not 1 <= line <= len(lines):
            return byte_offset + 1
        return len(lines[line - 1].encode("utf-8")[:byte_offset].decode("utf-8", errors="replace")) + 1

    def report(code: str, node: ast.AST, detail: str) -> None:
        if select is not None and code not in select:
            return
        line = getattr(node, "lineno", 1)
        col = column(line, getattr(node, "col_offset", 0))
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
