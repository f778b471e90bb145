"""Shared fixtures for the explain tests: the knowledge base, the vectors, a checker, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VECTORS = json.loads((HERE / "vectors.json").read_text(encoding="utf-8"))
SEED = HERE / "seed"


@pytest.fixture(scope="session")
def kb() -> dict:
    from samedevice.explain.knowledge import build

    return build()


@pytest.fixture(scope="session")
def explain(kb):
    from samedevice.explain.engine import explain_text

    def run(text: str) -> dict:
        return explain_text(text, kb)

    return run


def check(result: dict, expect: dict) -> list[str]:
    """What in ``result`` contradicts a vector's expectations (empty when it all holds)."""
    problems = []
    primary = result["errors"][0] if result["errors"] else {}
    for key, want in expect.items():
        if key == "family":
            got = result["families"][0] if result["families"] else None
        elif key == "family_top3":
            got = want if want in result["families"][:3] else result["families"][:3]
        elif key == "n_errors":
            got = len(result["errors"])
        elif key == "frames":
            got = result["traceback"]["frames"]
        elif key == "case":
            got = result["cases"][0] if result["cases"] else None
        elif key in ("argnum", "exception_printed"):
            got = primary.get(key)
        else:
            got = result[key]
        if got != want:
            problems.append(f"{key}: expected {want!r}, got {got!r}")
    return problems


def run_cli(*args: str, stdin: bytes | None = None, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """``samedevice explain ...`` in a fresh interpreter (what a user runs)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "samedevice", "explain", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=full_env,
        cwd=ROOT,
        timeout=timeout,
    )


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    """Keep the explain cache of the test run out of the user's ~/.cache."""
    old = os.environ.get("SAMEDEVICE_CACHE_DIR")
    os.environ["SAMEDEVICE_CACHE_DIR"] = str(tmp_path_factory.mktemp("explain-cache"))
    yield
    if old is None:
        os.environ.pop("SAMEDEVICE_CACHE_DIR", None)
    else:
        os.environ["SAMEDEVICE_CACHE_DIR"] = old
