"""``samedevice.audit``: every tensor that is not on the device it should be on."""

from __future__ import annotations

from typing import Any

import torch

from . import _devices
from ._expect import NO_REFERENCE, Expectation, expect, family
from ._report import Finding, Report, Row, Skip
from ._walk import Route, Seen, Walk, walk


def run(named: list[tuple[str, Any]], device: Any = None) -> Report:
    """Audit named roots (``[("model", model), ...]``) against ``device`` or the inferred one."""
    return run_walk(walk(named), [n for n, _ in named], device)


def run_walk(w: Walk, roots: list[str], device: Any = None) -> Report:
    """The report for a finished walk."""
    exp = expect(w, device)
    skipped = [Skip(s.path, s.reason) for s in w.skipped]
    if exp is None:
        return Report(roots, [], skipped, 0, None, "", notes=list(w.notes))
    if exp.basis == NO_REFERENCE:
        return Report(roots, [], skipped, len(w.seen), None, NO_REFERENCE, notes=list(w.notes),
                      devices=sorted({_devices.label(_devices.raw_device(s.tensor)) for s in w.seen.values()}))
    misplaced = _misplaced(w, exp)
    whole_off = _roots_entirely_off(w, misplaced)
    findings: list[Finding] = []
    for s, actual, expected in misplaced:
        fam = family(s, actual, expected, s.root in whole_off and s.route is Route.REGISTERED)
        findings.append(Finding(
            path=full_path(w, s), device=_devices.label(actual), shape=tuple(s.tensor.shape),
            dtype=_devices.dtype_text(s.tensor.dtype), family=fam, expected=_devices.label(expected),
        ))
    return Report(
        roots, findings, skipped, len(w.seen),
        _devices.label(exp.device) if exp.device is not None else None, exp.basis,
        split=[(m, _devices.label(d)) for m, d in exp.split], notes=list(w.notes),
        rows=_rows(findings, whole_off, misplaced),
    )


def full_path(w: Walk, s: Seen) -> str:
    """The path of ``s``; optimizer state is named through its parameter's own path."""
    if s.key is None:
        return s.path
    key = w.name_of(s.key) or f"<parameter {_devices.shape_text(s.key.shape)}>"
    return f"{s.path}[{key}]{s.suffix}"


def _misplaced(w: Walk, exp: Expectation) -> list[tuple[Seen, torch.device, torch.device]]:
    out = []
    for s in w.seen.values():
        actual = _devices.raw_device(s.tensor)
        if s.scalar_state and actual.type == "cpu":
            continue  # Adam's ``step`` and friends: 0-dim CPU state is what PyTorch makes
        param_device = _devices.raw_device(s.key) if s.key is not None else None
        expected = exp.for_tensor(s, param_device)
        if expected is not None and not _devices.matches(actual, expected):
            out.append((s, actual, expected))
    return out


def _roots_entirely_off(w: Walk, misplaced: list[tuple[Seen, torch.device, torch.device]]) -> set[str]:
    """Roots whose every registered tensor is misplaced: the model itself was never moved."""
    total: dict[str, int] = {}
    for s in w.seen.values():
        if s.route is Route.REGISTERED:
            total[s.root] = total.get(s.root, 0) + 1
    off: dict[str, int] = {}
    for s, _, _ in misplaced:
        if s.route is Route.REGISTERED:
            off[s.root] = off.get(s.root, 0) + 1
    return {root for root, n in off.items() if n == total[root] and n > 1}


def _rows(findings: list[Finding], whole_off: set[str],
          misplaced: list[tuple[Seen, torch.device, torch.device]]) -> list[Row]:
    """Table rows: a never-moved model is one line, not one line per parameter."""
    pairs = list(zip(findings, (s for s, _, _ in misplaced), strict=True))
    groups: dict[str, list[Finding]] = {}
    for f, s in pairs:
        if s.root in whole_off and s.route is Route.REGISTERED:
            groups.setdefault(s.root, []).append(f)
    rows: list[Row] = []
    for f, s in pairs:
        group = groups.get(s.root) if s.route is Route.REGISTERED else None
        if group is None:
            rows.append(Row(f.path, f.device, _devices.shape_text(f.shape), f.dtype, f.family))
        elif f is group[0]:
            rows.append(Row(f"{s.root} (all parameters and buffers)",
                            ", ".join(sorted({g.device for g in group})), f"{len(group)} tensors",
                            ", ".join(sorted({g.dtype for g in group})), f.family))
    return rows
