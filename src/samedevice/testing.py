"""Assertions for device errors, for this project's tests and for users' own.

``expect_device_error`` asserts *which* device error a block raises -- its template, op,
argument and device pair -- not merely that something failed (``pytest.raises(RuntimeError)``
passes on a typo). ``assert_matches_cpu`` runs a computation on the accelerator and on the CPU
and compares the results.

The signatures read here are the texts PyTorch 2.8+ prints (and the simulated accelerator
reproduces); for reading pasted errors from any PyTorch version use ``samedevice explain``.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Signature:
    """What a device-error message says: template id, op, argument, devices as printed."""

    template: str
    op: str = ""
    argument: str = ""
    devices: tuple[str, ...] = ()
    wrapper_key: str = ""


@functools.cache
def _catalogue() -> dict:
    # the message catalogue of ``samedevice explain`` (templates.toml): one source for the texts
    from samedevice.explain.knowledge import build

    return build(with_cases=False)


def signature(message: str) -> Signature | None:
    """The signature of a device-error message, read with ``samedevice explain``'s catalogue.

    ``devices`` are in the order the message prints them; for T3 (conv type mismatch) they are
    the printed tensor types and ``argument`` is ``weight`` or ``bias``.
    """
    from samedevice.explain.messages import find_errors

    errors = find_errors(message.splitlines() or [message], _catalogue())
    if not errors:
        return None
    e = errors[0]
    if e["template"] == "T3":
        fields = e["fields"]
        return Signature("T3", argument=fields.get("param", ""),
                         devices=(fields.get("input_type", ""), fields.get("param_type", "")))
    key = ""
    if e["wrapper"].startswith("wrapper_") and e["op"]:
        key = e["wrapper"][len("wrapper_"):-len(e["op"])].strip("_")
    return Signature(e["template"], op=e["op"], argument=e["argument"],
                     devices=tuple(e["devices"]), wrapper_key=key)


class ExpectedDeviceError:
    """Filled in when the ``expect_device_error`` block exits: the exception and its signature."""

    exception: BaseException | None = None
    signature: Signature | None = None


@contextlib.contextmanager
def expect_device_error(template: str | None = None, op: str | None = None,
                        argument: str | None = None, devices: tuple[str, ...] | None = None,
                        exception: type[BaseException] = RuntimeError,
                        match: str | None = None) -> Iterator[ExpectedDeviceError]:
    """Assert that the block raises the device error described, and nothing else.

    >>> with expect_device_error(template="T2", op="addmm", argument="mat1"):
    ...     model(cpu_batch)
    """
    __tracebackhide__ = True
    info = ExpectedDeviceError()
    try:
        yield info
    except exception as e:
        info.exception = e
        check_device_error(e, template=template, op=op, argument=argument, devices=devices, match=match)
        info.signature = signature(str(e))
        return
    raise AssertionError(
        f"expected a device error{_describe(template, op, argument, devices)}, but nothing was raised"
    )


def check_device_error(exc: BaseException, *, template: str | None = None, op: str | None = None,
                       argument: str | None = None, devices: tuple[str, ...] | None = None,
                       match: str | None = None) -> Signature:
    """Raise AssertionError unless ``exc`` is the device error described; return its signature."""
    __tracebackhide__ = True
    text = str(exc)
    sig = signature(text)
    if sig is None:
        raise AssertionError(f"not a device error: {type(exc).__name__}: {text}")
    wanted = {"template": template, "op": op, "argument": argument,
              "devices": tuple(devices) if devices is not None else None}
    wrong = [f"{k} is {getattr(sig, k)!r}, expected {v!r}" for k, v in wanted.items()
             if v is not None and getattr(sig, k) != v]
    if match is not None and not re.search(match, text):
        wrong.append(f"message does not match {match!r}")
    if wrong:
        raise AssertionError(f"wrong device error ({'; '.join(wrong)}): {text}")
    return sig


def check_case_error(slug: str, exc: BaseException | None = None) -> Signature:
    """Assert that ``exc`` (default: the last error in this interpreter) is the case's error.

    Used by the hidden cell after each case page's failing cell: the exception type and the
    message for the installed torch version must equal the case's metadata, word for word.
    """
    __tracebackhide__ = True
    import torch

    from samedevice.cases import case_message_text, get_case

    case = get_case(slug)
    exc = exc if exc is not None else getattr(sys, "last_value", None)
    if exc is None:
        raise AssertionError(f"{slug}: the failing cell raised nothing -- the page is stale")
    name, text = type(exc).__name__, str(exc)
    from samedevice.sim.runner import is_wrapped, rank_exception

    if is_wrapped(name, text):  # a spawned rank or DataLoader worker failed: its own exception counts
        name, text = rank_exception(text) or (name, text)
    if name != case.error.exception:
        raise AssertionError(f"{slug}: raised {name}: {text}; expected {case.error.exception}")
    expected = case.error.message_for(torch.__version__)
    if expected is None:
        raise AssertionError(f"{slug}: no message recorded for torch {torch.__version__}")
    if case_message_text(text) != case_message_text(expected.text):
        raise AssertionError(f"{slug}: message differs\n  expected: {expected.text}\n  got:      {text}")
    sig = signature(case_message_text(text))
    if sig is None:
        raise AssertionError(f"{slug}: not a recognised device error: {text}")
    return sig


def _describe(template: str | None, op: str | None, argument: str | None, devices: Any) -> str:
    parts = [f"{k}={v!r}" for k, v in (("template", template), ("op", op), ("argument", argument),
                                        ("devices", devices)) if v is not None]
    return f" ({', '.join(parts)})" if parts else ""


def assert_matches_cpu(fn: Callable[[Any], Any], device: Any = None, *, rtol: float = 1.3e-6,
                       atol: float = 1e-5) -> None:
    """Run ``fn(device)`` and ``fn(torch.device("cpu"))`` and compare what they return.

    ``fn`` builds its tensors on the device it is given. ``device`` defaults to the simulated
    accelerator (enabled on demand). Results may be tensors or nested lists/tuples/dicts of them.
    """
    __tracebackhide__ = True
    import torch

    if device is None:
        from samedevice import sim

        device = sim.enable()
    got = fn(torch.device(device) if isinstance(device, str) else device)
    want = fn(torch.device("cpu"))
    torch.testing.assert_close(_to_cpu(got), want, rtol=rtol, atol=atol)


def _to_cpu(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu")
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    return value


def snapshot(namespace: dict[str, Any]) -> Any:
    """The objects a program left in ``namespace``: public names, functions and classes too.

    Case pages keep the failing program's objects this way before the fixed program replaces
    them, so "Find it in your code" audits what actually went wrong (``broken.model``, and the
    broken program's own functions, ``broken.encode``), not the fixed program's versions.
    """
    import types

    kept = {
        k: v for k, v in namespace.items()
        if not k.startswith("_") and not isinstance(v, types.ModuleType)
        and k not in ("In", "Out", "exit", "quit", "get_ipython")
    }
    return types.SimpleNamespace(**kept)


def forget_last_error() -> None:
    """Clear the interpreter's record of the last uncaught error (``sys.last_value``), so the
    next check sees only what the next cell raises."""
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
