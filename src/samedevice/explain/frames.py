"""Traceback frames and their failing source lines, from CPython, IPython/Jupyter and rich.

A frame records the file (``\\`` turned into ``/`` so Windows paths read like the others), the
library path below ``site-packages/`` (``lightly/loss/dino_loss.py``), the function, and the
source line the traceback shows for it. PyTorch's own frames are marked: their paths are
evidence (``torch/optim/...``) but their source lines are not the user's failing code.
"""

from __future__ import annotations

from samedevice.explain.dialect import compiled


def read_frames(region: list[str], lo: int, kb: dict) -> list[dict]:
    """Frames in the region (lines already whitespace-collapsed; the first is paste line ``lo``),
    in paste order (innermost last in each traceback)."""
    cfg = kb["frames"]
    hints = cfg["hints"]
    carets = compiled(cfg["carets"])
    arrow = compiled(cfg["arrow"])
    labelled = compiled(cfg["labelled_source"])
    exception = compiled(cfg["exception_line"])
    boundary = compiled(kb["clean"]["boundary"])
    frames: list[dict] = []
    current: dict | None = None
    for offset, line in enumerate(region):
        idx = lo + offset
        low = line.lower()
        frame = None
        if any(h in low for h in hints):
            frame = _frame(line, idx, kb)
        if frame is not None:
            frames.append(frame)
            current = frame
            continue
        if current is None or current["source"]:
            continue
        m = arrow.match(line) or labelled.match(line)
        if m:
            current["source"] = m.group("src").strip(" ")
            current["source_line"] = idx
            continue
        stripped = line.strip(" ")
        if current["mode"] == "next" and idx == current["line"] + 1:
            if stripped and not carets.match(line) and not boundary.match(line) and not exception.match(line):
                current["source"] = stripped
                current["source_line"] = idx
    return frames


def _frame(line: str, idx: int, kb: dict) -> dict | None:
    cfg = kb["frames"]
    for pattern in cfg["patterns"]:
        m = compiled(pattern["regex"]).search(line)
        if not m:
            continue
        groups = m.groupdict()
        path = (groups.get("path") or "").replace("\\", "/")
        if not path and groups.get("cell"):
            path = f"<cell {groups['cell']}>"
        lib = ""
        roots = list(compiled(cfg["library_root"]).finditer(path))
        if roots:
            lib = path[roots[-1].end() :]
        return {
            "path": path,
            "lib": lib,
            "func": groups.get("func") or "",
            "line": idx,
            # the line in the file (the paste's own line number is "line"); 0 when not printed
            "lineno": int(groups["line"]) if (groups.get("line") or "").isdigit() else 0,
            "source": "",
            "source_line": -1,
            "mode": pattern["source"],
            "torch": bool(lib and compiled(cfg["torch_internal"]).search(lib)),
        }
    return None
