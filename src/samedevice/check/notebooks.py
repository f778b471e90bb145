"""Jupyter notebooks, checked as the script their code cells make, findings placed in cells.

A notebook is JSON; read as Python it is one dict literal, and it passed every rule. Its code
cells are joined in order (a notebook runs top to bottom, and a model made in one cell is moved
in another), IPython's ``%magic``, ``!shell`` and ``%%cell`` lines are blanked so the rest
parses, and each finding is reported in its cell, at the line inside that cell.
"""

from __future__ import annotations

import json
from dataclasses import replace

from .engine import SYNTAX_ERROR, Finding, check_source


def _cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _python_lines(source: str) -> list[str]:
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        return [""] * len(lines)  # a cell magic: the cell is not Python (%%bash, %%writefile)
    return ["" if line.lstrip().startswith(("%", "!")) else line for line in lines]


def check_notebook(text: str, path: str, select: set[str] | None = None) -> list[Finding]:
    try:
        notebook = json.loads(text)
        cells = notebook["cells"]
        if not isinstance(cells, list):
            raise TypeError("cells is not a list")
    except (ValueError, KeyError, TypeError) as e:
        return [Finding(path, 1, 1, SYNTAX_ERROR, f"cannot read the notebook (nbformat 4 JSON): {e}")]
    joined: list[str] = []
    where: list[tuple[int, int]] = []  # joined line (0-based) -> (cell number, line in the cell)
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        for i, line in enumerate(_python_lines(_cell_source(cell)), 1):
            joined.append(line)
            where.append((number, i))
    if not joined:
        return []
    found = check_source("\n".join(joined) + "\n", path, select)
    out = []
    for f in found:
        cell, line = where[min(max(f.line, 1), len(where)) - 1]
        out.append(replace(f, line=line, cell=cell))
    return sorted(out, key=lambda f: (f.cell, f.line, f.col, f.code))
