"""The note ``locate`` adds to a device error: which tensor each argument of the call was.

::

    samedevice.locate: F.linear failed in model.out_head (Linear.forward)
      mat1 (input) ← x in TinyGPT.forward, model.py:27 (cuda:0)
      weight ← model.out_head.weight (cpu)  ✗
      bias ← model.out_head.bias (cpu)  ✗
      ✗ not on cuda:0, where most parameters are
      F1 Moved, then modified: https://samedevice.github.io/samedevice/families/f1/

The message names the argument of the ATen operator that tripped the check (``mat1``, the
first argument whose device differs from the first tensor's) -- not necessarily the culprit.
The note names every argument and marks the ones off the expected device.
"""

from __future__ import annotations

import dataclasses
import re
import types
from typing import Any

import torch

from . import _calls, _devices, _links
from ._expect import expect, family
from ._namer import Name, Namer, is_library_frame
from ._walk import Route, Walk

PREFIX = "samedevice.locate:"
MAX_ARGS_SHOWN = 8
_DEVICE_ERROR = re.compile(
    r"Expected all tensors to be on the same device|is not on the expected device|"
    r"Input type \(.*\) and (weight|bias) type|indices should be either on cpu|"
    r"are not at the same device|device type for generator|"
    r"module must have its parameters and buffers on device|No backend type associated with device|"
    r"can't convert \S+ device type tensor|Expected (a|all) .*on the same device|Tensor device mismatch|"
    r"Expected object of device type|Tensors must be CUDA|device mismatch",
)


def is_device_error(exc: BaseException) -> bool:
    return bool(_DEVICE_ERROR.search(str(exc)))


@dataclasses.dataclass
class Failure:
    """A torch API call that raised a device error inside the block."""

    func: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    exception: BaseException


@dataclasses.dataclass
class Arg:
    label: str  # how the note names the argument: "weight", "mat1 (input)"
    tensor: torch.Tensor
    device: torch.device
    name: Name


def compose(exc: BaseException, failure: Failure | None, namer: Namer, walk: Walk,
            frames: list[tuple[types.FrameType, int]], roots: list[str]) -> str:
    """The whole note for ``exc``."""
    if failure is None:
        return "\n".join(_fallback(walk, roots, "the failing call was not a torch API call seen inside the block"))
    pairs = _calls.bind(failure.func, failure.args, failure.kwargs)
    args = [Arg(label, t, _devices.raw_device(t), namer.name(t)) for label, t in _calls.tensors_of(pairs)]
    _relabel_from_message(str(exc), args)
    head = f"{PREFIX} {_calls.display_name(failure.func)} failed"
    module = _running_module(frames, namer)
    if module:
        head += f" in {module}"
    lines = [head]
    expected, basis = _expected(args, walk, str(exc))
    culprits = [a for a in args if expected is not None and not _devices.matches(a.device, expected)]
    shown = _shown(args, culprits)
    for a in shown:
        mark = "  ✗" if a in culprits else ""
        lines.append(f"  {a.label} ← {a.name.text} ({_devices.label(a.device)}){mark}")
    if len(shown) < len(args):
        lines.append(f"  ... and {len(args) - len(shown)} more tensors on {_devices.label(expected or args[0].device)}")
    if culprits and expected is not None:
        lines.append(f"  ✗ not on {_devices.label(expected)}, {basis}")
        fam, sure = _family(culprits, expected)
        if fam:
            lines.append("  " + ("" if sure else "likely ") + _links.family_line(fam))
    else:
        lines += _fallback(walk, roots, "the tensors of this call do not show the mismatch")[1:]
    return "\n".join(lines)


def _relabel_from_message(message: str, args: list[Arg]) -> None:
    """Call ``mat1 (input)`` the argument the message calls ``mat1``."""
    from samedevice.testing import signature

    sig = signature(message)
    if sig is None or not sig.argument or sig.template != "T2":
        return
    if any(a.label == sig.argument for a in args):
        return
    on_named_device = [a for a in args if _devices.label(a.device) == sig.devices[0]]
    if len(on_named_device) == 1:
        a = on_named_device[0]
        a.label = f"{sig.argument} ({a.label})"


def _expected(args: list[Arg], walk: Walk, message: str) -> tuple[torch.device | None, str]:
    devices = {a.device for a in args}
    if len(devices) < 2:
        return None, ""
    exp = expect(walk)
    if exp is not None and exp.device is not None and exp.device in devices:
        return exp.device, exp.basis
    registered = [a.device for a in args if a.name.seen is not None and a.name.seen.route is Route.REGISTERED]
    if registered:
        return max(set(registered), key=registered.count), "where this call's parameters are"
    accelerators = [d for d in devices if _devices.is_accelerator(d)]
    if len(accelerators) == 1:
        return accelerators[0], "the accelerator this call runs on"
    # Two accelerators and nothing to go by: the first tensor sets the device, as in the check.
    return args[0].device, "where the call's first tensor is"


def _shown(args: list[Arg], culprits: list[Arg]) -> list[Arg]:
    if len(args) <= MAX_ARGS_SHOWN:
        return args
    rest = [a for a in args if a not in culprits]
    keep = culprits[: MAX_ARGS_SHOWN - 1] + rest[:1]
    return [a for a in args if a in keep]


def _family(culprits: list[Arg], expected: torch.device) -> tuple[str | None, bool]:
    """The family the culprits point to, and whether that is known or a guess."""
    for a in culprits:
        if _devices.is_accelerator(a.device) and _devices.is_accelerator(expected):
            return "F8", True
        if a.name.origin is not None:
            return a.name.origin.family, True
        if a.name.seen is not None:
            return family(a.name.seen, a.device, expected, whole_root_off=False), True
    if any(a.name.local for a in culprits):
        # A variable of the user's own code that is none of the objects passed: most often
        # data the loop did not move (labels, masks). Not certain, so said as a guess.
        return "F3", False
    return None, False


def _running_module(frames: list[tuple[types.FrameType, int]], namer: Namer) -> str | None:
    """``model.out_head (Linear.forward)``: the innermost module whose code was running."""
    for frame, _ in reversed(frames):
        if is_library_frame(frame):
            continue
        me = frame.f_locals.get("self")
        if isinstance(me, torch.nn.Module):
            name = namer.module_name(me)
            where = frame.f_code.co_qualname
            return f"{name} ({where})" if name else where
    return None


def _fallback(walk: Walk, roots: list[str], why: str) -> list[str]:
    """Without a call to read: what an audit of the objects passed finds misplaced."""
    from ._audit import run_walk

    lines = [f"{PREFIX} {why}."]
    report = run_walk(walk, roots)
    if not roots:
        lines.append("  Pass the model, optimizer and batch to locate() to have them checked.")
    elif not report:
        lines.append(f"  Nothing misplaced in {', '.join(roots)}.")
    else:
        lines.append(f"  Misplaced in {', '.join(roots)} (not on {report.expected or 'their part'}):")
        lines += [f"  {f.path} ({f.device}) {f.family}" for f in report.findings[:MAX_ARGS_SHOWN]]
        fams = sorted({f.family for f in report.findings}, key=lambda f: int(f[1:]))
        lines += ["  " + _links.family_line(f) for f in fams]
    return lines
