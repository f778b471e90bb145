"""Finding the files to check and checking them, on several processes when there are many."""

from __future__ import annotations

import fnmatch
import io
import os
import stat
import sys
import tokenize
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .engine import SYNTAX_ERROR, Finding, check_source

SKIP_DIRS = frozenset({".git", ".hg", ".venv", "venv", "__pycache__", ".tox", ".nox", "node_modules",
                       ".mypy_cache", ".ruff_cache", ".pytest_cache", "build", "dist", "site-packages"})
PARALLEL_FROM = 40  # files; below this a pool costs more than it saves


class PathError(ValueError):
    """A path on the command line that does not exist."""


def _excluded(path: Path, patterns: list[str], root: Path | None = None) -> bool:
    """``path`` matches a pattern relative to ``root`` (the pyproject's folder) or by name."""
    if not patterns:
        return False
    s = path.as_posix()
    if root is not None:
        try:
            s = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
        except ValueError:
            pass
    return any(fnmatch.fnmatch(s, p) or fnmatch.fnmatch(path.name, p) or fnmatch.fnmatch(s, f"{p}/*")
               for p in patterns)


def _regular(path: Path) -> bool:
    """A regular file (following links): a FIFO or device named ``x.py`` would block the read,
    a link to itself or to nowhere cannot be read."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, RuntimeError):
        return False


def collect(paths: Iterable[str], exclude: list[str], root: Path | None = None,
            seen: set[str] | None = None) -> list[Path]:
    """Python files under the given files and folders, in a stable order, each once (and none
    already in ``seen``, which a caller collecting in several calls shares)."""
    files: list[Path] = []
    seen = set() if seen is None else seen

    def add(f: Path) -> None:
        key = os.path.normcase(os.path.abspath(f))
        if key not in seen:
            seen.add(key)
            files.append(f)

    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for folder, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")
                                 and not _excluded(Path(folder) / d, exclude, root))
                for n in sorted(names):
                    f = Path(folder) / n
                    if n.endswith((".py", ".pyi")) and not _excluded(f, exclude, root) and _regular(f):
                        add(f)
        elif _regular(p):
            add(p)  # named explicitly: checked even if excluded or not *.py
        elif os.path.lexists(p):
            raise PathError(f"{raw}: not a regular file or folder")
        else:
            raise PathError(f"{raw}: no such file or directory")
    return files


def decode(data: bytes) -> str:
    """Source bytes as Python reads them: a UTF-8 BOM or a PEP 263 ``coding:`` line is honoured."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)  # SyntaxError if bogus
    return data.decode(encoding)


def check_file(path: Path, select: frozenset[str] | None = None) -> tuple[list[Finding], int]:
    """Findings and line count of one file; an unreadable file is one SD000 finding, a rule that
    fails on it one SD999 finding (the other files' findings are kept)."""
    try:
        text = decode(path.read_bytes())
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as e:
        return [Finding(str(path), 1, 1, SYNTAX_ERROR, f"cannot read: {e}")], 0
    sel = set(select) if select is not None else None
    if path.suffix == ".ipynb":
        from .notebooks import check_notebook

        return check_notebook(text, str(path), sel), text.count("\n")
    return check_source(text, str(path), sel), text.count("\n")


def _check_many(args: tuple[list[str], frozenset[str] | None]) -> tuple[list[Finding], int]:
    paths, select = args
    out: list[Finding] = []
    lines = 0
    for p in paths:
        found, n = check_file(Path(p), select)
        out += found
        lines += n
    return out, lines


def check_files(files: list[Path], select: set[str] | None, jobs: int | None = None,
                progress: Callable[[int, int], None] | None = None) -> tuple[list[Finding], int]:
    """All findings (sorted) and the number of lines checked."""
    sel = frozenset(select) if select is not None else None
    jobs = jobs or min(os.cpu_count() or 1, 8)
    if len(files) < PARALLEL_FROM or jobs < 2:
        findings, lines = [], 0
        for i, f in enumerate(files, 1):
            found, n = check_file(f, sel)
            findings += found
            lines += n
            if progress:
                progress(i, len(files))
        return sorted(findings), lines
    # chunks of about 20 files, biggest first, so no worker is left with the tail
    ordered = sorted(files, key=lambda f: -_size(f))
    chunks = [[str(f) for f in ordered[i::max(1, len(ordered) // 20)]]
              for i in range(max(1, len(ordered) // 20))]
    findings, lines, done = [], 0, 0
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for (found, n), chunk in zip(pool.map(_check_many, [(c, sel) for c in chunks]), chunks, strict=True):
            findings += found
            lines += n
            done += len(chunk)
            if progress:
                progress(done, len(files))
    return sorted(findings), lines


def _size(f: Path) -> int:
    try:
        return f.stat().st_size
    except OSError:
        return 0


def progress_printer(stream=None) -> Callable[[int, int], None] | None:
    """A one-line counter on a terminal (nothing when stderr is not one)."""
    stream = stream or sys.stderr
    if not stream.isatty():
        return None

    def show(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        stream.write(f"\rsamedevice check: {done}/{total} files{end}")
        stream.flush()

    return show
