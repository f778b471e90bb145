"""Build hook: the wheel carries the checkout's case files (see src/samedevice/_bundle.py).

Everything else about the package is declared in pyproject.toml. ``build_py`` copies the
files ``_bundle.CONTENTS`` lists from ``cases/`` and ``snippets/`` into the built package at
build time, so the checkout stays the one source of truth and no copy is committed. An
editable install skips the copy: it reads the checkout itself.
"""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
_bundle = runpy.run_path(str(ROOT / "src" / "samedevice" / "_bundle.py"))


def bundled_files() -> list[tuple[Path, Path]]:
    """(source in the checkout, path relative to the bundle folder) for each carried file."""
    out = []
    for folder, patterns in _bundle["CONTENTS"].items():
        for pattern in patterns:
            for src in sorted((ROOT / folder).glob(pattern)):
                if src.is_file() and "__pycache__" not in src.parts and src.suffix != ".pyc":
                    out.append((src, src.relative_to(ROOT)))
    return out


class BuildPyWithCases(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads cases/ and snippets/ from the checkout
        target = Path(self.build_lib) / "samedevice" / _bundle["BUNDLE_DIR"]
        if target.exists():
            shutil.rmtree(target)  # a case deleted from the checkout must leave the wheel too
        files = bundled_files()
        if not files:
            raise SystemExit("setup.py: no case files found under cases/ and snippets/")
        for src, rel in files:
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)


setup(cmdclass={"build_py": BuildPyWithCases})
