"""``samedevice.locate``: name the tensors of the call that raised a device error.

Inside the block a ``TorchFunctionMode`` sees every call the user's code makes into torch's
API (``F.linear``, ``a - b``, ``torch.cat``, optimizer arithmetic). It does two cheap things:
when a call raises, it keeps the call and its arguments; when a factory or a transfer
returns, it remembers where the tensor came from (``_origins``). Everything else -- walking
the objects passed, reading the frames, naming, composing the note -- happens only after a
device error has escaped the block, so a block that does not fail pays for the mode alone
(``benchmarks/locate_overhead.py`` measures it).

A TorchFunctionMode rather than a TorchDispatchMode: the dispatch mode sees ATen operators
(``addmm``, the names the message uses) but a pass-through one cost 2.3-4.4x on a ~1 ms CPU
training step here, against 1.5-1.9x for this mode -- the same as an empty TorchFunctionMode
measured alongside. The call-level view also gives the names users know (``weight``, not
``mat2``); the message's ATen argument is matched to the call's by device (``_note``).
It sees the failing call on CUDA, on the simulated accelerator (whose kernel raises in
Python, below the mode) and on ``meta`` alike: the exception passes through the mode's frame.
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ._names import argument_names
from ._origins import WATCHED, Origins


class _Watch(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.origins = Origins()
        self.failure: Any = None

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        __tracebackhide__ = True
        if kwargs is None:
            kwargs = {}
        try:
            out = func(*args, **kwargs)
        except Exception as e:
            self._failed(func, args, kwargs, e)
            raise
        if func in WATCHED:
            self.origins.note(func, args, kwargs, out)
        return out

    def _failed(self, func: Any, args: tuple, kwargs: dict, e: Exception) -> None:
        from ._note import Failure, is_device_error

        if is_device_error(e):
            self.failure = Failure(func, args, kwargs, e)


class locate:  # lower case: used like a function: ``with locate(model, batch):``
    """Context manager and decorator that explains device errors raised inside it.

    >>> with samedevice.locate(model, optimizer, batch):
    ...     loss = loss_fn(model(batch["pixels"]), batch["labels"])

    When a device error escapes, the exception gains a note (PEP 678) saying which tensor each
    argument of the failing call was (``weight ← model.classifier.weight (cuda:0)``) and
    which family of root causes that points to. Objects are named as the call wrote them;
    ``locate(loss_fn=loss)`` names them explicitly. ``@locate(model)`` decorates a function;
    bare ``@locate`` works too (tensors are then named by the function's variables).
    """

    def __init__(self, *objects: Any, **named: Any) -> None:
        self._func: Callable[..., Any] | None = None
        if len(objects) == 1 and not named and isinstance(objects[0], types.FunctionType):
            self._func = objects[0]  # bare ``@locate``
            functools.update_wrapper(self, self._func)
            objects = ()
        names = argument_names(sys._getframe(1), objects)
        self._named: list[tuple[str, Any]] = list(zip(names, objects, strict=True)) + list(named.items())
        self._watches: list[_Watch] = []  # one per active entry: decorated functions recurse

    def __enter__(self) -> locate:
        watch = _Watch()
        watch.__enter__()
        self._watches.append(watch)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        watch = self._watches.pop()
        _leave(watch)
        if exc is not None and isinstance(exc, Exception):
            from ._explain import annotate

            annotate(exc, watch.failure, watch.origins, self._named)
        return False

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """Bare ``@locate`` on a method: bind it like the function it replaces."""
        if obj is None or self._func is None:
            return self
        return functools.partial(self.__call__, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._func is not None:
            with self:
                return self._func(*args, **kwargs)
        if len(args) != 1 or kwargs or not callable(args[0]):
            raise TypeError("locate(...) decorates a function: @locate(model) def step(batch): ...")
        func = args[0]

        @functools.wraps(func)
        def wrapper(*a: Any, **k: Any) -> Any:
            __tracebackhide__ = True
            with self:
                return func(*a, **k)

        return wrapper


def _leave(watch: _Watch) -> None:
    """Pop ``watch`` off the torch-function mode stack, wherever it now is.

    ``TorchFunctionMode.__exit__`` pops the top mode, whichever it is; code inside the block
    may have pushed a mode for good (``sim.enable(alias_cuda=True)`` does), and popping that
    one instead would leave the watch running forever and drop the user's mode.
    """
    stack_len = torch._C._len_torch_function_stack()
    above = []
    while stack_len > 0 and torch._C._get_function_stack_at(stack_len - 1) is not watch:
        above.append(torch._C._pop_torch_function_stack())
        stack_len -= 1
    if stack_len > 0:
        watch.__exit__(None, None, None)
    for mode in reversed(above):
        torch._C._push_on_torch_function_stack(mode)
