"""What ``samedevice.audit`` returns: findings, skipped objects, and how to show them.

The text form is what a terminal, a test failure and a notebook's text output show; it stays
within 100 columns unless a path itself is longer. ``_repr_html_`` is the same table for
notebooks, with every value escaped. ``to_dict`` is for programs.
"""

from __future__ import annotations

import dataclasses
import html
from typing import Any

from . import _links
from ._expect import NO_REFERENCE

MAX_ROWS = 30  # findings shown in the text and HTML tables; to_dict() has all of them


@dataclasses.dataclass(frozen=True)
class Finding:
    """One tensor that is not where it should be."""

    path: str
    device: str
    shape: tuple[int, ...]
    dtype: str
    family: str
    expected: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "device": self.device, "shape": list(self.shape),
                "dtype": self.dtype, "family": self.family, "expected": self.expected}


@dataclasses.dataclass(frozen=True)
class Skip:
    """An object the audit could not read, and why."""

    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclasses.dataclass(frozen=True)
class Row:
    """One line of the table: a finding, or a whole misplaced model folded into one line."""

    path: str
    device: str
    shape: str
    dtype: str
    family: str


@dataclasses.dataclass
class Report:
    """The result of an audit. True when something is misplaced.

    ``print(report)`` (or a notebook cell ending in it) shows the table; ``report.findings``
    and ``report.to_dict()`` give the same facts to programs.
    """

    roots: list[str]
    findings: list[Finding]
    skipped: list[Skip]
    tensors: int
    expected: str | None  # the one expected device; None when split or nothing was found
    basis: str
    split: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    rows: list[Row] = dataclasses.field(default_factory=list)
    devices: list[str] = dataclasses.field(default_factory=list)  # set when there is no reference

    @property
    def judged(self) -> bool:
        """False when the audit had no reference device to hold the tensors to (no
        parameters, everything on the CPU): then an empty report proves nothing."""
        return self.basis != NO_REFERENCE

    def __bool__(self) -> bool:
        return bool(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.to_dict() for f in self.findings],
            "skipped": [s.to_dict() for s in self.skipped],
            "expected": self.expected,
            "split": [{"module": m, "device": d} for m, d in self.split],
            "tensors": self.tensors,
            "judged": self.judged,
            "notes": list(self.notes),
        }

    # -- text --------------------------------------------------------------------------------

    def headline(self) -> str:
        names = ", ".join(self.roots) or "nothing"
        if self.tensors == 0:
            return f"samedevice.audit: found no tensors in {names}."
        if not self.judged:
            count = "its 1 tensor is" if self.tensors == 1 else f"all {self.tensors} tensors are"
            it = "it" if self.tensors == 1 else "them"
            return (f"samedevice.audit: no reference device: no parameters in {names}, and {count} "
                    f"on {', '.join(self.devices)} (a CPU run and a model never moved look the "
                    f"same); pass device= (e.g. device=\"cuda\") to check {it} against yours.")
        where = self._where()
        if not self.findings:
            every = "the 1 tensor" if self.tensors == 1 else f"all {self.tensors} tensors"
            verb = "is" if self.tensors == 1 else "are"
            return f"samedevice.audit: {every} in {names} {verb} {where}. Nothing misplaced."
        n = len(self.findings)
        verb = "is" if n == 1 else "are"
        return f"samedevice.audit: {n} of {self.tensors} tensors {verb} not {where}."

    def _where(self) -> str:
        if self.expected is None:
            return "on the device of the model part they belong to"
        return f"on {self.expected} ({self.basis})"

    def __str__(self) -> str:
        lines = [self.headline()]
        if self.split:
            lines.append("The model is split over several devices (F8, by design or not):")
            lines += [f"  {m}  {d}" for m, d in self.split[:8]]
            if len(self.split) > 8:
                lines.append(f"  ... and {len(self.split) - 8} more parts")
        if self.rows:
            lines += ["", *_table(self._shown_rows())]
            if len(self.rows) > MAX_ROWS:
                lines.append(f"  ... and {len(self.rows) - MAX_ROWS} more (report.findings has all)")
            lines.append("")
            lines += [_links.family_line(f) for f in self._families()]
        for note in self.notes:
            lines.append(f"note: {note}")
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)} place(s) the walk did not read whole:")
            lines += [f"  {s.path}: {s.reason}" for s in self.skipped[:10]]
            if len(self.skipped) > 10:
                lines.append(f"  ... and {len(self.skipped) - 10} more (report.skipped has all)")
        return "\n".join(lines)

    __repr__ = __str__

    def _shown_rows(self) -> list[Row]:
        return self.rows[:MAX_ROWS]

    def _families(self) -> list[str]:
        seen: list[str] = []
        for r in self.rows:
            if r.family not in seen:
                seen.append(r.family)
        return sorted(seen, key=lambda f: int(f[1:]))

    # -- HTML --------------------------------------------------------------------------------

    def _repr_html_(self) -> str:
        e = html.escape
        parts = [f"<div class=\"samedevice-audit\"><p>{e(self.headline())}</p>"]
        if self.split:
            parts.append("<p>The model is split over several devices (F8, by design or not):</p><ul>")
            parts += [f"<li><code>{e(m)}</code> {e(d)}</li>" for m, d in self.split]
            parts.append("</ul>")
        if self.rows:
            parts.append("<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in _HEADERS)
                         + "</tr></thead><tbody>")
            for r in self._shown_rows():
                link = (f"<a href=\"{e(_links.family_url(r.family))}\">"
                        f"{e(r.family)} {e(_links.family_title(r.family))}</a>")
                parts.append(f"<tr><td><code>{e(r.path)}</code></td><td>{e(r.device)}</td>"
                             f"<td>{e(r.shape)}</td><td>{e(r.dtype)}</td><td>{link}</td></tr>")
            parts.append("</tbody></table>")
            if len(self.rows) > MAX_ROWS:
                parts.append(f"<p>... and {len(self.rows) - MAX_ROWS} more (report.findings has all)</p>")
            parts.append("<ul>" + "".join(
                f"<li><a href=\"{e(_links.family_url(f))}\">{e(f)} {e(_links.family_title(f))}</a></li>"
                for f in self._families()) + "</ul>")
        for note in self.notes:
            parts.append(f"<p>note: {e(note)}</p>")
        if self.skipped:
            parts.append("<p>Skipped (not read whole):</p><ul>")
            parts += [f"<li><code>{e(s.path)}</code>: {e(s.reason)}</li>" for s in self.skipped]
            parts.append("</ul>")
        parts.append("</div>")
        return "".join(parts)


_HEADERS = ("path", "device", "shape", "dtype", "family")


def _table(rows: list[Row]) -> list[str]:
    cells = [_HEADERS] + [(r.path, r.device, r.shape, r.dtype, r.family) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(_HEADERS) - 1)]
    out = []
    for c in cells:
        line = "  " + "  ".join(v.ljust(w) for v, w in zip(c, widths, strict=False)) + "  " + c[-1]
        out.append(line.rstrip())
    return out
