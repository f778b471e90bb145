"""The other files of the user's project: where an imported class is defined.

A failing statement reads ``self._center.value``; ``Center`` is imported from another file of
the project (``from .center import Center``), and a model's base class often is too. The
project is the folders the files came from (and ``--source`` roots): an import is resolved the
way Python would find it there -- relative to the importing file, or under a root or one of the
file's parent folders -- and the file is read with the same safety as a traceback's files
(never executed, never outside those folders). Every file is parsed once.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .reading import SourceText, read_source
from .source import SourceFile

MAX_REEXPORTS = 3  # ``from .modules import Center`` in an __init__.py that imports it again


@dataclass(frozen=True)
class ClassRef:
    node: ast.ClassDef
    src: SourceFile


class Project:
    def __init__(self, roots: list[Path] | None = None) -> None:
        self.roots = [r for r in (roots or []) if r.is_dir()]
        self._parsed: dict[Path, SourceFile | None] = {}
        self.notes: list[str] = []

    def parse(self, path: Path, shown: str | None = None) -> SourceFile | None:
        try:
            key = path.resolve()
        except (OSError, RuntimeError):
            return None
        if key in self._parsed:
            return self._parsed[key]
        source = read_source(path, shown or str(path))
        src = None
        if isinstance(source, SourceText):
            src = SourceFile(source.tree, shown or self.shown(path), source.text, local=path)
        elif source not in self.notes:
            self.notes.append(source)
        self._parsed[key] = src
        return src

    def shown(self, path: Path) -> str:
        """The path as the user knows it: below the root it was found in."""
        for root in self.roots:
            try:
                return str(path.resolve().relative_to(root.resolve()))
            except (ValueError, OSError, RuntimeError):
                continue
        return str(path)

    def module_file(self, importer: SourceFile, module: str, level: int) -> Path | None:
        """The file of ``module`` imported by ``importer``, found as Python would: relative to
        it, or from the folder that holds its top package (or a root). Nothing outside those."""
        if importer.local is None or (not module and not level):
            return None
        parts = [p for p in module.split(".") if p]
        here = importer.local.parent
        if level:
            base = here
            for _ in range(level - 1):
                base = base.parent
            starts = [base]
        else:
            starts = [*self.roots, package_root(here), here]
        for start in dict.fromkeys(starts):
            for candidate in ([start.joinpath(*parts).with_suffix(".py")] if parts else []) + \
                    [start.joinpath(*parts, "__init__.py")]:
                if candidate.is_file() and _inside(candidate, start):
                    return candidate
        return None

    def find_class(self, importer: SourceFile, name: str, depth: int = 0) -> ClassRef | None:
        """The class ``name`` as ``importer`` sees it: defined there, or imported from a file
        of the project."""
        info = importer.classes.get(name)
        if info is not None:
            return ClassRef(info.node, importer)
        if depth > MAX_REEXPORTS or name not in importer.imported_from:
            return None
        dotted, level = importer.imported_from[name]
        module, _, attr = dotted.rpartition(".")
        path = self.module_file(importer, module, level)
        if path is None:
            # ``from . import center`` then ``center.Center``: not followed
            return None
        src = self.parse(path)
        if src is None:
            return None
        return self.find_class(src, attr, depth + 1)

    def module_of(self, importer: SourceFile, alias: str) -> SourceFile | None:
        """The file of a module ``importer`` imported as ``alias`` (``import data``,
        ``from pkg import utils``, ``from . import model``), when it is a file of the project."""
        if alias in importer.imported_from:
            dotted, level = importer.imported_from[alias]
        elif alias in importer.aliases and not importer.aliases[alias].startswith("."):
            dotted, level = importer.aliases[alias], 0  # import model / import pkg.utils as u
        else:
            return None
        path = self.module_file(importer, dotted, level)
        return self.parse(path) if path is not None else None

    def find_function(self, importer: SourceFile, name: str, depth: int = 0
                      ) -> tuple[ast.FunctionDef, SourceFile] | None:
        """The module-level function ``name`` as ``importer`` sees it: defined there, or imported
        from a file of the project (``from utils import batchify``)."""
        fn = importer.functions.get(name)
        if fn is not None:
            return fn, importer
        if depth > MAX_REEXPORTS or name not in importer.imported_from:
            return None
        dotted, level = importer.imported_from[name]
        module, _, attr = dotted.rpartition(".")
        path = self.module_file(importer, module, level)
        src = self.parse(path) if path is not None else None
        return self.find_function(src, attr, depth + 1) if src is not None else None


def package_root(folder: Path) -> Path:
    """The folder Python would import ``folder``'s top package from: above the last parent that
    is a package (holds ``__init__.py``)."""
    top = folder
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    return top


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return False
