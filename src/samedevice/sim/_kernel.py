"""The simulated accelerator's one kernel: check devices as CUDA would, compute on the CPU.

Every ATen operator that reaches the PrivateUse1 dispatch key lands in :func:`run`. It

1. applies the device rule CUDA's code applies to that operator (``_checks``, driven by the
   facts torchgen reads from ``native_functions.yaml``, see ``_optable``);
2. swaps each ``sim`` tensor for a CPU tensor over the same memory (``_plumbing``), runs the
   CPU kernel, and hands back ``sim`` tensors over the results.

View operators never touch data: they are redispatched to the Meta kernels, which only compute
sizes and strides and return a tensor sharing the input's storage -- a real ``sim`` view.

Per-operator facts are computed once and cached in an :class:`OpSpec`; the hot path is a dict
lookup, a walk over precomputed argument positions and one CPU call. Frames here set
``__tracebackhide__`` so notebook tracebacks end at the user's line, as they do on CUDA.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from . import _checks, _optable, _sparse
from ._naming import BACKEND
from ._plumbing import from_cpu, repoint, set_geometry, to_cpu
from ._plumbing import is_sim as _is_sim

Tensor = torch.Tensor
_META = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)
_CPU = torch.device("cpu")
_STRIDED = torch.strided

# Kinds of operator, by what they return.
VIEW = 1  # returns an alias of an input (view, select, transpose, ...)
INPLACE_VIEW = 2  # changes an input's sizes/strides in place (t_, squeeze_, as_strided_)
COMPUTE = 3  # everything else: runs on CPU


class OpSpec:
    """Everything :func:`run` needs to know about one operator overload, computed once."""

    __slots__ = (
        "check",
        "device_kw",
        "generator",
        "kernel_check",
        "kind",
        "kw_tensors",
        "list_pos",
        "name",
        "op",
        "out_names",
        "returns",
        "tensor_pos",
        "wrapper",
    )

    def __init__(self, op: torch._ops.OpOverload, facts: _optable.OpFacts | None) -> None:
        schema = op._schema
        self.op = op
        self.name = schema.name.removeprefix("aten::") + (
            f".{schema.overload_name}" if schema.overload_name else ""
        )
        if facts is None:
            # Not an ATen operator in the yaml (a custom or prims op): no generated check.
            facts = _optable.OpFacts(_optable.NOCHECK, False, self.name.replace(".", "_"))
        self.check = facts.check
        self.wrapper = facts.wrapper
        self.kernel_check = _checks.KERNEL_CHECKS.get(self.name)
        tensor_pos: list[int] = []
        list_pos: list[int] = []
        kw_tensors: list[str] = []
        out_names: list[str] = []
        self.device_kw = False
        self.generator: int | str | None = None
        alias_sets: dict[str, tuple[str, int | str]] = {}
        for i, arg in enumerate(schema.arguments):
            type_text = str(arg.type)
            is_tensor = type_text in ("Tensor", "Optional[Tensor]")
            is_list = "Tensor" in type_text and not is_tensor
            ref: int | str = arg.name if arg.kwarg_only else i
            if arg.name == "device" and "Device" in type_text:
                self.device_kw = True
            if "Generator" in type_text:
                self.generator = ref
            if arg.alias_info is not None:
                for s in arg.alias_info.before_set:
                    alias_sets[s] = ("kw" if arg.kwarg_only else "pos", ref)
            if arg.kwarg_only:
                if is_tensor or is_list:
                    kw_tensors.append(arg.name)
                    if arg.alias_info is not None and arg.alias_info.is_write:
                        out_names.append(arg.name)
            elif is_tensor:
                tensor_pos.append(i)
            elif is_list:
                list_pos.append(i)
        self.tensor_pos = tuple(tensor_pos)
        self.list_pos = tuple(list_pos)
        self.kw_tensors = tuple(kw_tensors)
        self.out_names = tuple(out_names)
        returns: list[tuple[int | str, ...] | None] = []
        view = False
        for ret in schema.returns:
            info = ret.alias_info
            if info is None:
                returns.append(None)
                continue
            if not info.is_write:
                view = True
            source = next((alias_sets[s] for s in info.before_set if s in alias_sets), None)
            returns.append(source)
        self.returns = tuple(returns)
        if torch.Tag.inplace_view in op.tags:
            self.kind = INPLACE_VIEW
        elif view:
            self.kind = VIEW
        else:
            self.kind = COMPUTE

    # -- argument walking -------------------------------------------------------------------

    def named_tensors(self, args: tuple, kwargs: dict) -> list[tuple[str, Tensor]]:
        """Tensor arguments in the generated check's order: out arguments, then positional."""
        schema_args = self.op._schema.arguments
        found: list[tuple[str, Tensor]] = []
        for name in self.out_names:
            _collect(found, name, kwargs.get(name))
        for i in sorted(self.tensor_pos + self.list_pos):
            if i < len(args):
                _collect(found, schema_args[i].name, args[i])
        return found

    def operands(self, args: tuple, kwargs: dict) -> list[tuple[Tensor, bool]]:
        """Tensor arguments in TensorIterator order: outputs first, then inputs."""
        ops: list[tuple[Tensor, bool]] = []
        for name in self.out_names:
            ops.extend((t, True) for _, t in _collect([], name, kwargs.get(name)))
        mutated = {r[1] for r in self.returns if r is not None and r[0] == "pos"}
        for i in sorted(self.tensor_pos + self.list_pos):
            if i < len(args):
                ops.extend((t, i in mutated) for _, t in _collect([], "", args[i]))
        for name in self.kw_tensors:
            if name not in self.out_names:
                ops.extend((t, False) for _, t in _collect([], name, kwargs.get(name)))
        return ops


def _collect(found: list, name: str, value: Any) -> list[tuple[str, Tensor]]:
    if isinstance(value, Tensor):
        found.append((name, value))
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, Tensor):
                found.append((name, v))
    return found


_FACTS: dict[str, _optable.OpFacts] = {}
_SPECS: dict[torch._ops.OpOverload, OpSpec] = {}


def load_facts() -> dict[str, _optable.OpFacts]:
    if not _FACTS:
        _FACTS.update(_optable.load())
    return _FACTS


def spec_for(op: torch._ops.OpOverload) -> OpSpec:
    spec = _SPECS.get(op)
    if spec is None:
        name = op._schema.name
        facts = None
        if name.startswith("aten::"):
            short = name[6:]
            key = f"{short}.{op._schema.overload_name}" if op._schema.overload_name else short
            facts = load_facts().get(key)
        spec = _SPECS[op] = OpSpec(op, facts)
    return spec


# -- the kernel ---------------------------------------------------------------------------------


# id(op) -> (op, its special kernel or None, its spec or None): an operator's hash is a Python
# method (OpOverload.__hash__), and looking an operator up in SPECIAL and _SPECS by itself
# costs two of those calls on every op; id() is a builtin. The entry keeps its op, so the
# identity check below rules out a reused id. SPECIAL is filled when the backend is installed,
# before any op runs; _SPECIAL_SET clears this cache if it changes later.
_ENTRIES: dict[int, tuple] = {}


def _entry(op: torch._ops.OpOverload) -> tuple:
    special = SPECIAL.get(op)
    spec = None
    if special is None:
        spec = spec_for(op)
        if spec.kind != COMPUTE:
            # views and factories of metadata: straight to the Meta kernel, as run() would
            special = functools.partial(op._handle.redispatch_boxed, _META)
    entry = _ENTRIES[id(op)] = (op, special, spec)
    return entry


class _Specials(dict):
    def __setitem__(self, op: Any, kernel: Any) -> None:
        super().__setitem__(op, kernel)
        _ENTRIES.clear()


# An op's own kernel instead of run() (installed by _patches)
SPECIAL: dict[torch._ops.OpOverload, Callable[..., Any]] = _Specials()


# A kernel runs where the dispatcher calls it. Called from Python, every op has left the
# torch-function modes behind (each mode's handler pops itself); called from the autograd
# engine, which runs with the "cuda" alias pushed for the hooks (``_patches``), it would be
# under the alias: its ``t.device`` would say cuda, its tensor methods would go through the
# mode. Kernels shed the modes first (one C call to ask when nothing is pushed).
_modes_on = torch._C._is_torch_function_mode_enabled
_NoTorchFunction = torch._C.DisableTorchFunction


def hermetic(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, a Python kernel, run without the torch-function modes of its caller."""

    @functools.wraps(fn)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if _modes_on():
            with _NoTorchFunction():
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    return kernel


def fallback(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """Boxed fallback registered for every operator at the PrivateUse1 key."""
    __tracebackhide__ = True
    if _modes_on():
        with _NoTorchFunction():
            return fallback(op, *args, **kwargs)
    entry = _ENTRIES.get(id(op))
    if entry is None or entry[0] is not op:
        entry = _entry(op)
    if entry[1] is not None:
        return entry[1](*args, **kwargs)
    return run(entry[2], args, kwargs)


def kernel_for(op: torch._ops.OpOverload) -> Callable[..., Any]:
    """A direct kernel for one operator (used to stop composite decompositions, see _backend)."""

    def kernel(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if _modes_on():
            with _NoTorchFunction():
                return kernel(*args, **kwargs)
        entry = _ENTRIES.get(id(op))
        if entry is None or entry[0] is not op:
            entry = _entry(op)
        if entry[1] is not None:
            return entry[1](*args, **kwargs)
        return run(entry[2], args, kwargs)

    return kernel


def run(spec: OpSpec, args: tuple, kwargs: dict) -> Any:
    __tracebackhide__ = True
    if spec.kind != COMPUTE:
        return spec.op._handle.redispatch_boxed(_META, *args, **kwargs)

    # 1. Where are the tensors? Fast path: every tensor argument on one sim device.
    index = -2  # -2: no tensor seen; -1: a CPU (or meta) tensor; n: sim:n
    mixed = False
    nargs = len(args)
    for i in spec.tensor_pos:
        if i < nargs:
            a = args[i]
            if isinstance(a, Tensor):
                d = a.get_device()
                if index == -2:
                    index = d
                elif d != index:
                    mixed = True
    for i in spec.list_pos:
        if i < nargs and args[i]:
            for a in args[i]:
                if isinstance(a, Tensor):
                    d = a.get_device()
                    if index == -2:
                        index = d
                    elif d != index:
                        mixed = True
    if spec.kw_tensors:
        for name in spec.kw_tensors:
            a = kwargs.get(name)
            if isinstance(a, Tensor):
                d = a.get_device()
                if index == -2:
                    index = d
                elif d != index:
                    mixed = True
    if mixed or index == -1:  # a CPU (or meta) tensor among them: apply CUDA's rule
        index = _check_mixed(spec, args, kwargs)
    if spec.generator is not None:
        _check_generator(spec, args, kwargs, index)

    # 2. Convert, run on the CPU, convert back.
    # (``_is_sim`` inlined: ``get_device() >= 0 and not is_cuda``; this loop runs for every
    # tensor of every op)
    cargs = list(args)
    for i in spec.tensor_pos:
        if i < nargs:
            a = cargs[i]
            if isinstance(a, Tensor):
                if a.get_device() >= 0 and not a.is_cuda:
                    cargs[i] = to_cpu(a)
            elif a is not None:
                cargs[i] = _wrapped_number(a)
    for i in spec.list_pos:
        if i < nargs and cargs[i]:
            cargs[i] = [
                to_cpu(a) if isinstance(a, Tensor) and a.get_device() >= 0 and not a.is_cuda else a
                for a in cargs[i]
            ]
    ckwargs = kwargs
    if spec.kw_tensors or spec.device_kw:
        ckwargs = dict(kwargs)
        for name in spec.kw_tensors:
            a = ckwargs.get(name)
            if isinstance(a, Tensor):
                if _is_sim(a):
                    ckwargs[name] = to_cpu(a)
            elif isinstance(a, (list, tuple)):
                ckwargs[name] = [
                    to_cpu(x) if isinstance(x, Tensor) and _is_sim(x) else x for x in a
                ]
        dev = ckwargs.get("device")
        if dev is not None and torch.device(dev).type == BACKEND:
            ckwargs["device"] = _CPU
            if index < 0:
                index = _index_of(dev)
    # A sim generator is a CPU generator underneath (see _runtime.Generator): it passes as is.

    if spec.out_names:
        result = _call_with_outs(spec, args, kwargs, cargs, ckwargs)
    else:
        result = spec.op._op(*cargs, **ckwargs)

    returns = spec.returns
    if not returns:
        return result
    if index < 0:
        index = 0
    if len(returns) == 1:
        return _back(returns[0], result, args, kwargs, index)
    return tuple(_back(r, x, args, kwargs, index) for r, x in zip(returns, result, strict=True))


def _wrapped_number(value: Any) -> Any:
    """A Python number that stood for a tensor argument (``x % 3``), as a CPU scalar tensor.

    The dispatcher hands a Python kernel PyTorch's "wrapped number" tensors as plain numbers,
    and only a few operators (add, mul, ...) accept numbers back. A 0-dim tensor of the dtype
    a wrapped number has (bool, int64, the default float or complex dtype) promotes the same way.
    """
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.get_default_dtype())
    if isinstance(value, complex):
        default = torch.get_default_dtype()
        return torch.tensor(value, dtype=torch.complex128 if default == torch.float64 else torch.complex64)
    return value


def _back(source: tuple | None, value: Any, args: tuple, kwargs: dict, index: int) -> Any:
    if source is not None:  # the op wrote into (or returned) one of its arguments
        kind, ref = source
        return kwargs[ref] if kind == "kw" else args[ref]
    if isinstance(value, Tensor):
        if not value.is_cpu:
            return value
        if value.layout is _STRIDED:
            return from_cpu(value, index)
        return _sparse.sparse_from_cpu(value, index)  # to_sparse() and friends of a dense input
    if isinstance(value, list):
        return [from_cpu(v, index) if isinstance(v, Tensor) and v.is_cpu else v for v in value]
    return value


def _call_with_outs(spec: OpSpec, args: tuple, kwargs: dict, cargs: list, ckwargs: dict) -> Any:
    """Run an ``out=`` overload; if the CPU kernel resized an output, resize the sim output.

    CPU views over sim memory cannot grow (their storage is borrowed), so an output that is
    empty or too small gets a fresh CPU tensor, and the sim tensor is pointed at it afterwards
    -- what ``resize_`` does on a real device.
    """
    __tracebackhide__ = True
    fresh: dict[str, Tensor] = {}
    for name in spec.out_names:
        out = kwargs.get(name)
        if isinstance(out, Tensor) and _is_sim(out) and out.numel() == 0:
            fresh[name] = ckwargs[name] = torch.empty(0, dtype=out.dtype)
    try:
        result = spec.op._op(*cargs, **ckwargs)
    except RuntimeError as e:
        if "not resizable" not in str(e):
            raise
        for name in spec.out_names:
            out = kwargs.get(name)
            if isinstance(out, Tensor) and _is_sim(out) and name not in fresh:
                fresh[name] = ckwargs[name] = torch.empty(0, dtype=out.dtype)
        result = spec.op._op(*cargs, **ckwargs)
    for name in spec.out_names:
        out = kwargs.get(name)
        if not (isinstance(out, Tensor) and _is_sim(out)):
            continue
        cpu_out = ckwargs[name]
        if name in fresh:
            repoint(out, cpu_out)
        elif cpu_out.shape != out.shape or cpu_out.stride() != out.stride():
            set_geometry(out, cpu_out.shape, cpu_out.stride(), out.storage_offset())
    return result


# -- the slow path: mixed devices ----------------------------------------------------------------


def _check_mixed(spec: OpSpec, args: tuple, kwargs: dict) -> int:
    """Apply CUDA's rule for this op to arguments on several devices; return the output index."""
    __tracebackhide__ = True
    check = spec.check
    if check == _optable.EXACT:  # the generated wrapper checks before the kernel runs
        _checks.check_exact(spec.named_tensors(args, kwargs), spec.wrapper)
    if spec.kernel_check is not None:
        if spec.kernel_check(args, kwargs) == _checks.ITER_AFTER:
            _checks.check_iter(spec.operands(args, kwargs))
    elif check == _optable.ITER:
        _checks.check_iter(spec.operands(args, kwargs))
    elif check == _optable.FOREACH:
        _check_foreach(spec, args, kwargs)
    for _, t in spec.named_tensors(args, kwargs):
        if _is_sim(t):
            return t.get_device()
    for t, _ in spec.operands(args, kwargs):
        if _is_sim(t):
            return t.get_device()
    return -1


def _check_foreach(spec: OpSpec, args: tuple, kwargs: dict) -> None:
    """CUDA runs mixed-device ``_foreach_*`` calls one index at a time through TensorIterator."""
    __tracebackhide__ = True
    lists = [args[i] for i in spec.list_pos if i < len(args) and args[i]]
    singles = [args[i] for i in spec.tensor_pos if i < len(args) and isinstance(args[i], Tensor)]
    if not lists:
        return
    mutated = {r[1] for r in spec.returns if r is not None and r[0] == "pos"}
    first_is_output = (spec.list_pos and spec.list_pos[0] in mutated) or spec.name.split(".")[0].endswith("_")
    for k in range(len(lists[0])):
        operands: list[tuple[Tensor, bool]] = []
        for j, lst in enumerate(lists):
            if k < len(lst) and isinstance(lst[k], Tensor):
                operands.append((lst[k], j == 0 and bool(first_is_output)))
        operands.extend((t, False) for t in singles)
        _checks.check_iter(operands)


def _index_of(device: Any) -> int:
    d = torch.device(device)
    if d.index is not None:
        return d.index
    from ._backend import current_index

    return current_index()


# -- generators ------------------------------------------------------------------------------------

# Generators created for the sim device are CPU generators underneath; they are recognised by
# their C++ identity (``_cdata``), which survives the trip through the dispatcher.
SIM_GENERATORS: dict[int, Any] = {}


def _check_generator(spec: OpSpec, args: tuple, kwargs: dict, index: int) -> None:
    __tracebackhide__ = True
    ref = spec.generator
    gen = kwargs.get(ref) if isinstance(ref, str) else (args[ref] if ref < len(args) else None)
    if gen is None or index < 0:
        return
    if gen._cdata not in SIM_GENERATORS:
        from ._naming import device_type_text

        raise RuntimeError(_checks.generator_message(device_type_text(), gen.device.type))

