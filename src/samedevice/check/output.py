"""Findings printed the ways other tools print them: text, JSON, GitHub annotations, SARIF."""

from __future__ import annotations

import json
import os
from urllib.parse import quote

from .engine import Finding
from .links import family_url, rule_url
from .registry import BY_CODE, RULES

FORMATS = ("text", "json", "github", "sarif")


def _where(f: Finding) -> str:
    return f"{f.path}:cell {f.cell}:{f.line}:{f.col}" if f.cell else f"{f.path}:{f.line}:{f.col}"


def text(findings: list[Finding]) -> str:
    lines = []
    for f in findings:
        link = f" ({family_url(f.family)})" if f.family else ""
        lines.append(f"{_where(f)}: {f.code} {f.message}{link}")
    return "\n".join(lines)


def as_json(findings: list[Finding]) -> str:
    return json.dumps([
        {"path": f.path, "line": f.line, "column": f.col, "code": f.code, "family": f.family,
         "message": f.message, "cell": f.cell or None,
         "url": rule_url(f.code) if f.code in BY_CODE else None,
         "family_url": family_url(f.family) if f.family else None}
        for f in findings], indent=2)


def _escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return s.replace(":", "%3A").replace(",", "%2C") if prop else s


def github(findings: list[Finding]) -> str:
    """GitHub Actions workflow commands: each finding becomes an annotation on the diff."""
    lines = []
    for f in findings:
        level = "warning" if f.code in BY_CODE else "error"
        title = f"{f.code} (cell {f.cell})" if f.cell else f.code
        lines.append(f"::{level} file={_escape(f.path, True)},line={f.line},col={f.col},"
                     f"title={_escape(title, True)}::{_escape(f.message)}")
    return "\n".join(lines)


def artifact_uri(path: str) -> str:
    """A path as SARIF's ``artifactLocation.uri``: an RFC 3986 URI reference, so spaces, ``#``,
    ``%`` and ``<stdin>`` are percent-encoded; an absolute path is a ``file://`` URI."""
    if os.path.isabs(path):
        return "file://" + quote(path.replace(os.sep, "/"), safe="/")
    return quote(path.replace(os.sep, "/"), safe="/")


def sarif(findings: list[Finding]) -> str:
    rules = [{"id": r.code, "name": r.name, "shortDescription": {"text": r.summary},
              "fullDescription": {"text": r.why}, "helpUri": rule_url(r.code),
              "properties": {"family": r.family}} for r in RULES]
    index = {r.code: i for i, r in enumerate(RULES)}
    results = []
    for f in findings:
        res = {"ruleId": f.code, "level": "warning" if f.code in BY_CODE else "error",
               "message": {"text": f.message},
               "locations": [{"physicalLocation": {
                   "artifactLocation": {"uri": artifact_uri(f.path)},
                   "region": {"startLine": f.line, "startColumn": f.col}}}]}
        if f.cell:
            res["properties"] = {"cell": f.cell}
        if f.code in index:
            res["ruleIndex"] = index[f.code]
        results.append(res)
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
           "runs": [{"tool": {"driver": {"name": "samedevice check", "informationUri": rule_url(RULES[0].code).split("#")[0],
                                         "rules": rules}}, "results": results}]}
    return json.dumps(doc, indent=2)


def render(findings: list[Finding], fmt: str) -> str:
    return {"text": text, "json": as_json, "github": github, "sarif": sarif}[fmt](findings)


def statistics(findings: list[Finding]) -> str:
    """Ruff's ``--statistics``: one line per rule, the most frequent first."""
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    width = len(str(max(counts.values()))) if counts else 1
    rows = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        name = BY_CODE[code].name if code in BY_CODE else ("syntax-error" if code == "SD000" else "internal-error")
        rows.append(f"{n:>{width}}\t{code}\t{name}")
    return "\n".join(rows)


def summary(findings: list[Finding], files: int) -> str:
    n = len(findings)
    if not n:
        return f"samedevice check: {files} file{'s' * (files != 1)} checked, no findings"
    codes = sorted({f.code for f in findings})
    return (f"samedevice check: {n} finding{'s' * (n != 1)} in {files} file{'s' * (files != 1)} "
            f"({', '.join(codes)}); rules: {rule_url(codes[0]).split('#')[0]}")


__all__ = ["BY_CODE", "FORMATS", "render", "summary"]
