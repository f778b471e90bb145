"""``samedevice check``: find device bugs in source code, before anything runs.

A static checker over the standard library's ``ast``; it never imports torch. The rules and
their documentation live in :mod:`samedevice.check.registry`.
"""

from __future__ import annotations

from .engine import SYNTAX_ERROR, Finding, check_source
from .registry import BY_CODE, RULES, Rule

__all__ = ["BY_CODE", "RULES", "SYNTAX_ERROR", "Finding", "Rule", "check_source"]
