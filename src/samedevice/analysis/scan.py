"""When the paste names no line: the likeliest culprits in the user's own code.

Half of real pastes hold the message and nothing else. The user who runs ``explain --source DIR``
still has the code, so every statement of the project where the message's operation could have
run (``torch.cat`` for a ``cat``, a layer call for ``addmm``, any elementwise op for a bare T1)
is read the way a failing statement is (:func:`samedevice.analysis.culprit.diagnose`), and the
statements whose operand has a CPU origin are ranked: the kinds that are bugs wherever they
stand (a tensor in a plain attribute, layers in a plain list, a layer replaced after the move,
``torch.load`` without ``map_location``) before a factory without ``device=`` in ``forward`` or
a loss, before one anywhere. It is a ranking of places to look, said as such, not a verdict.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .culprit import KIND_RANK, Culprit, FileIndex, diagnose
from .reading import SourceText, read_source
from .source import SourceFile

MAX_FILES = 2000
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", "env",
              "site-packages", "dist-packages", "build", "dist", ".tox", ".mypy_cache"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# file names too many projects share for a paste naming one to single it out
_GENERIC_STEMS = frozenset({"model", "models", "train", "utils", "main", "__init__", "modules", "layers",
                            "module", "inference", "predict", "trainer", "dataset", "config", "common"})
_HOT_FUNCTIONS = ("forward", "loss", "__call__", "step", "sample", "predict", "generate", "decode",
                  "encode", "compute", "update", "infer")


@dataclass
class Candidate:
    path: str
    line: int
    end_line: int
    statement: str
    function: str
    culprit: Culprit
    rank: tuple[int, int, int, int]


def python_files(root: Path) -> list[Path]:
    """The ``.py`` files under ``root``; links that lead out of it are not followed."""
    out: list[Path] = []
    try:
        base = root.resolve()
    except (OSError, RuntimeError):
        return out
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                path = Path(folder) / name
                try:
                    if not path.resolve().is_relative_to(base):
                        continue
                except (OSError, RuntimeError):
                    continue
                out.append(path)
                if len(out) >= MAX_FILES:
                    return out
    return out


def _op_words(facts: dict) -> tuple[str, ...]:
    """Call names a statement must hold to be where the message's op ran ('' : any op)."""
    # the templates that name their operation without an op: deserialisation, NumPy conversion
    if facts.get("template") == "T10":
        return ("load",)
    if facts.get("template") == "T11":
        return ("numpy", "array", "asarray")
    op = (facts.get("op_base") or facts.get("op") or "").lower().lstrip("_")
    if not op:
        return ()
    groups = (
        (("cat", "concat", "stack"), ("cat", "concat", "stack", "hstack", "vstack")),
        (("index_select", "embedding", "index"), ("index_select", "embedding", "gather", "take")),
        (("masked_fill",), ("masked_fill", "masked_fill_")),
        (("where",), ("where",)),
        (("gather",), ("gather",)),
        (("scatter",), ("scatter", "scatter_", "scatter_add", "scatter_add_")),
        (("bucketize", "searchsorted"), ("bucketize", "searchsorted")),
        (("lerp",), ("lerp", "lerp_")),
    )
    for keys, words in groups:
        if any(k in op for k in keys):
            return words
    return ()


def _statements(src: SourceFile) -> list[ast.stmt]:
    out = []
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Return | ast.Expr):
            out.append(node)
    return out


def _holds(stmt: ast.stmt, words: tuple[str, ...]) -> bool:
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in words:
                return True
    return False


def _elementwise(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.BinOp | ast.Compare | ast.Call) for n in ast.walk(stmt))


def scan(roots: list[Path], facts: dict, *, limit: int = 5, named: frozenset[str] = frozenset(),
         progress: Callable[[int, int], None] | None = None) -> tuple[list[Candidate], list[str]]:
    """The best ``limit`` candidates over the Python files under ``roots``, and notes.
    ``named``: the names the paste holds (lower case); a place whose file, function or culprit
    the paste names comes first -- the reporter said where to look.
    ``progress(done, total)`` is called after each file (a large checkout takes a while)."""
    words = _op_words(facts)
    found: list[Candidate] = []
    notes: list[str] = []
    files = [(root, path) for root in roots for path in python_files(root)]
    for done, (root, path) in enumerate(files, 1):
        if progress is not None:
            progress(done, len(files))
        shown = str(path.relative_to(root))
        source = read_source(path, shown)
        if not isinstance(source, SourceText):
            notes.append(source)
            continue
        try:
            found += _scan_file(source, shown, facts, words, named)
        except RecursionError:
            notes.append(f"{shown}: skipped, too deeply nested to analyse")
    found.sort(key=lambda c: (c.rank, c.path, c.line))
    seen: set[tuple[str, str]] = set()
    best = []
    for c in found:  # one place per origin: many statements may read the same attribute
        key = (c.culprit.made_at, c.culprit.expr)
        if key in seen:
            continue
        seen.add(key)
        best.append(c)
        if len(best) == limit:
            break
    return best, notes


def _mentioned(named: frozenset[str], path: str, function: str, expr: str) -> bool:
    if not named:
        return False
    stem = Path(path).stem.lower()
    if len(stem) >= 5 and stem not in _GENERIC_STEMS and stem in named:
        return True
    if len(function) >= 5 and function.lower() in named and function not in _HOT_FUNCTIONS:
        return True
    return any(len(t) >= 5 and t.lower() in named for t in _IDENT.findall(expr) if t not in ("torch", "self"))


def _scan_file(source: SourceText, shown: str, facts: dict, words: tuple[str, ...],
               named: frozenset[str] = frozenset()) -> list[Candidate]:
    src = SourceFile(source.tree, shown, source.text)
    index = FileIndex(src)
    out = []
    for stmt in _statements(src):
        if words and not _holds(stmt, words):
            continue
        if not words and not _elementwise(stmt):
            continue
        diag = diagnose(src, stmt.lineno, facts, path=shown, tree=index, stmt=stmt)
        if diag is None or diag.culprit is None:
            continue
        hot = 0 if any(h in (diag.function or "").lower() for h in _HOT_FUNCTIONS) else 1
        said = 0 if _mentioned(named, shown, diag.function, diag.culprit.expr) else 1
        rank = (said, KIND_RANK.get(diag.culprit.kind, 6), hot, 0 if diag.cls else 1)
        out.append(Candidate(path=shown, line=diag.line, end_line=diag.end_line, statement=diag.statement,
                             function=diag.function, culprit=diag.culprit, rank=rank))
    return out
