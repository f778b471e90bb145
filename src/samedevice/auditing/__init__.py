"""Find the tensor that is on the wrong device, by the name it has in the user's code.

* :func:`audit` walks models, optimizers, schedulers and batches and reports every tensor that
  is not where it should be, with its path (``loss_fn._center.center``), device, shape, dtype
  and the root-cause family it points to.
* :func:`locate` is a context manager and decorator: when a device error escapes it, the
  exception gains a note naming, for each argument of the failing call, the tensor it was.
* :func:`assert_on_device` is :func:`audit` as an assertion, for users' own tests.

Nothing here moves, copies or materialises a tensor, and nothing initialises CUDA.
"""

from __future__ import annotations

import sys
from typing import Any

from ._links import family_url, site_url
from ._locate import locate
from ._names import argument_names
from ._report import Finding, Report, Skip

__all__ = ["Finding", "Report", "Skip", "assert_on_device", "audit", "family_url", "locate", "site_url"]


def _named(frame: Any, objects: tuple[Any, ...], named: dict[str, Any]) -> list[tuple[str, Any]]:
    return list(zip(argument_names(frame, objects), objects, strict=True)) + list(named.items())


def audit(*objects: Any, device: Any = None, **named: Any) -> Report:
    """Report every tensor in ``objects`` that is not on the expected device.

    ``objects`` are modules, optimizers, LR schedulers, metrics, tensors, or dicts, lists and
    plain objects holding them. They are named as the call wrote them (``audit(model, batch)``
    names ``model`` and ``batch``); ``audit(loss_fn=loss)`` names them explicitly. ``device``
    defaults to where most of the parameters are (with none, where the tensors on an
    accelerator are); with no parameters and every tensor on the CPU the report says there is
    no reference device (``report.judged`` is False) instead of "Nothing misplaced".
    """
    from ._audit import run

    return run(_named(sys._getframe(1), objects, named), device)


def assert_on_device(*objects: Any, device: Any = None, **named: Any) -> Report:
    """Raise ``AssertionError`` with the audit table if any tensor in ``objects`` is misplaced.

    >>> assert_on_device(model, optimizer, device="cuda")
    """
    __tracebackhide__ = True
    from ._audit import run

    report = run(_named(sys._getframe(1), objects, named), device)
    if report or not report.judged:  # with no reference device, passing would prove nothing
        raise AssertionError(str(report))
    return report
