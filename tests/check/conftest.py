"""The ``upstream`` test here is opt-in, like the rest of the upstream tier; ``run`` is
``samedevice check ARGS`` in this process, for the command-line tests."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from samedevice.cli import main
from tests.upstream.conftest import SKIP_REASON, upstream_selected


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if upstream_selected(config.getoption("markexpr", default="") or ""):
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if item.get_closest_marker("upstream") and "tests/check/" in item.nodeid:
            item.add_marker(skip)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run(monkeypatch, capsys):
    """``samedevice check ARGS`` in this process (a subprocess costs a second each)."""
    monkeypatch.delenv("SAMEDEVICE_SITE_URL", raising=False)
    monkeypatch.setenv("SAMEDEVICE_DOCS_URL", "https://example.test/guide/")

    def go(*args: str, cwd: Path, stdin: str | None = None) -> Result:
        monkeypatch.chdir(cwd)
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        code = main(["check", *args])
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return go
