"""``[tool.samedevice]`` in the nearest ``pyproject.toml``: ``select``, ``extend-select``,
``ignore``, ``exclude`` and ``per-file-ignores``. Patterns are relative to the folder of that
``pyproject.toml`` (as Ruff anchors them), or match a file name anywhere."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .registry import BY_CODE, expand_selector


class ConfigError(ValueError):
    """A bad ``[tool.samedevice]`` table or option; the message names the file and the key."""


@dataclass
class Config:
    select: set[str] = field(default_factory=lambda: set(BY_CODE))
    exclude: list[str] = field(default_factory=list)
    source: Path | None = None
    per_file_ignores: dict[str, set[str]] = field(default_factory=dict)

    def apply_per_file_ignores(self, findings: list) -> list:
        if not self.per_file_ignores:
            return findings
        root = self.source.parent if self.source else Path.cwd()
        out = []
        for f in findings:
            path = Path(f.path)
            try:
                rel = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
            except ValueError:
                rel = path.as_posix()
            ignored = set().union(*(codes for pattern, codes in self.per_file_ignores.items()
                                    if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(path.name, pattern)))
            if f.code not in ignored:
                out.append(f)
        return out


def find_pyproject(start: Path) -> Path | None:
    try:
        start = start.resolve()
    except (OSError, RuntimeError):  # a link to itself: "Symlink loop"
        start = Path(os.path.abspath(start))
    try:
        first = start if start.is_dir() else start.parent
    except OSError:
        first = start.parent
    for folder in (first, *first.parents):
        candidate = folder / "pyproject.toml"
        try:
            if candidate.is_file():
                return candidate
        except OSError:
            continue
    return None


def _codes(values: object, where: str) -> set[str]:
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ConfigError(f"{where} must be a list of rule codes")
    out: set[str] = set()
    for v in values:
        try:
            out |= expand_selector(v)
        except ValueError as e:
            raise ConfigError(f"{where}: {e}") from None
    return out


def load(start: Path, select: list[str] | None = None, ignore: list[str] | None = None,
         extend_select: list[str] | None = None) -> Config:
    """The configuration for paths under ``start``; command-line lists win over the file."""
    cfg = Config()
    path = find_pyproject(start)
    table: dict = {}
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: invalid TOML ({e})") from None
        table = data.get("tool", {}).get("samedevice", {})
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.samedevice] must be a table")
        unknown = set(table) - {"select", "extend-select", "ignore", "exclude", "per-file-ignores"}
        if unknown:
            raise ConfigError(f"{path}: unknown key(s) in [tool.samedevice]: {', '.join(sorted(unknown))}")
        cfg.source = path
    where = f"{path}: [tool.samedevice]" if path else "option"
    if select:
        cfg.select = _codes(select, "--select")
    elif "select" in table:
        cfg.select = _codes(table["select"], f"{where} select")
    if "extend-select" in table:
        cfg.select |= _codes(table["extend-select"], f"{where} extend-select")
    if extend_select:
        cfg.select |= _codes(extend_select, "--extend-select")
    ignored = _codes(table["ignore"], f"{where} ignore") if "ignore" in table else set()
    if ignore:
        ignored |= _codes(ignore, "--ignore")
    cfg.select -= ignored
    excl = table.get("exclude", [])
    if not isinstance(excl, list) or not all(isinstance(e, str) for e in excl):
        raise ConfigError(f"{where} exclude must be a list of glob patterns")
    cfg.exclude = list(excl)
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where} per-file-ignores must be a table of pattern = [codes]")
    cfg.per_file_ignores = {pattern: _codes(codes, f"{where} per-file-ignores {pattern!r}")
                            for pattern, codes in per_file.items()}
    return cfg
