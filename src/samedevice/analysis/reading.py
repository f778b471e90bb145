"""Reading the source files a traceback names: safely, and only those.

A traceback's paths are read, never executed, never followed outside the file they name (or
outside a ``--source`` folder the user gave). Whatever cannot be read -- missing, a folder, a
FIFO, too large, binary, not decodable, not Python -- gives a one-line note instead of a file,
so a paste from another machine, a notebook cell or a compiled extension costs nothing.
"""

from __future__ import annotations

import ast
import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_SOURCE_BYTES = 2 * 1024 * 1024  # larger "source" is generated code or data, not a user's file


@dataclass(frozen=True)
class SourceText:
    path: Path  # the local file read
    shown: str  # the path as the traceback printed it
    text: str
    tree: ast.Module


def _parts(traceback_path: str) -> list[str]:
    """``C:\\work\\proj\\train.py`` and ``/home/u/proj/train.py`` -> ``[..., 'proj', 'train.py']``."""
    path = traceback_path.replace("\\", "/")
    return [p for p in PurePosixPath(path).parts if p not in ("/", "", ".") and not p.endswith(":")]


def resolve(traceback_path: str, source_dirs: list[Path], *, local: bool = True) -> Path | None:
    """The local file behind a traceback path: the path itself when it exists here (``local``),
    else the longest suffix of it found under one of ``source_dirs`` (a checkout of the code
    that ran on another machine). A candidate that escapes its folder through a link is refused."""
    if not traceback_path or traceback_path.startswith("<"):
        return None  # <stdin>, <cell 3>, <frozen ...>, <string>
    if local:
        own = Path(traceback_path)
        if own.is_absolute() and _regular(own):
            return own
    parts = _parts(traceback_path)
    for root in source_dirs:
        try:
            base = root.resolve()
        except (OSError, RuntimeError):
            continue
        for k in range(len(parts), 0, -1):
            candidate = base.joinpath(*parts[-k:])
            if not _regular(candidate):
                continue
            try:
                inside = candidate.resolve().is_relative_to(base)
            except (OSError, RuntimeError):
                inside = False
            if inside:
                return candidate
    return None


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)  # follows links; a FIFO or a device is not read
    except (OSError, ValueError, RuntimeError):
        return False


def read_source(path: Path, shown: str) -> SourceText | str:
    """The parsed file, or a one-line note saying why it was skipped."""
    try:
        size = os.stat(path).st_size
    except OSError as e:
        return f"{shown}: cannot be read ({e.strerror or e})"
    if size > MAX_SOURCE_BYTES:
        return f"{shown}: skipped, {size // 1024} KB is over the {MAX_SOURCE_BYTES // 1024} KB read limit"
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as e:
        return f"{shown}: cannot be read ({e.strerror or e})"
    if b"\0" in data:
        return f"{shown}: skipped, a binary file"
    try:
        # PEP 263 coding lines and a UTF-8 BOM, as Python itself reads a source file
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return f"{shown}: skipped, not text Python can decode"
    text = text.removeprefix("\ufeff")
    try:
        tree = ast.parse(text, filename=shown)
    except (SyntaxError, ValueError):
        return f"{shown}: skipped, not valid Python for this interpreter"
    except (RecursionError, MemoryError):
        return f"{shown}: skipped, too deeply nested to parse"
    return SourceText(path=path, shown=shown, text=text, tree=tree)


def library_path(path: str) -> str:
    """The path as a user recognises it: below site-packages for an installed library
    (``lightly/loss/dino_loss.py``), else as printed."""
    norm = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in norm:
            return norm.split(marker, 1)[1]
    return norm
