"""``samedevice check``: find device bugs in source code, before anything runs.

A static checker over the standard library's ``ast``; it never imports torch. The rules and
their documentation live in :mod:`samedevice.check.registry`.
"""

from __future__ import annotations

from .engine import SYNTAX_ERROR, Finding, check_source
from .registry import BY_CODE, RULES, Rule

__all__ = ["BY_CODE", "RULES", "SYNTAX_ERROR", "Finding", "Rule", "check_source"]


def run(*paths: str, display: str | None = None) -> None:
    """Print what ``samedevice check PATHS`` prints (text format), for notebooks and scripts.
    ``display`` names the single path in the output (the case pages show
    ``snippets/<slug>/broken.py`` while their kernel runs in ``cases/``)."""
    from pathlib import Path

    from .output import render
    from .runner import check_file

    findings = []
    for p in paths:
        found, _ = check_file(Path(p))
        findings += found
    if display is not None:
        findings = [Finding(display, f.line, f.col, f.code, f.message) for f in findings]
    print(render(sorted(findings), "text") or "no findings")
