"""Where tensors live, followed through one function at a time (SD302, SD401, SD501, SD901).

Each expression gets a *place*: ``CPU`` (made by a factory without ``device=``, or moved there
by ``.cpu()``), ``DEV`` (follows the input or the model: a tensor argument, a parameter, a
tensor created with ``device=`` or moved with ``.to(device)``), ``SCALAR`` (Python numbers,
shapes, 0-dim tensors, which may meet any device) or unknown (``None``). Only a meeting of a
``CPU`` tensor with a ``DEV`` tensor in one op is reported, and only where both are certain on
every path: an unknown operand never produces a finding.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable
from dataclasses import dataclass

from .source import SourceFile, const_str, kwarg


@dataclass(frozen=True)
class Place:
    kind: str  # "cpu" | "dev" | "scalar"
    origin: ast.AST | None = None  # for "cpu": the factory call or the .cpu() call
    how: str = ""  # for "cpu": "factory" | "transfer"
    container: bool = False  # a list / tuple / dict of such tensors
    model: bool = False  # a module instance moved to a device (SD302)


DEV = Place("dev")
SCALAR = Place("scalar")
EMPTY = Place("scalar", container=True)  # an empty list: joins as nothing

FACTORIES = frozenset({
    "zeros", "ones", "empty", "full", "arange", "range", "linspace", "logspace", "eye", "rand",
    "randn", "randint", "randperm", "tensor", "as_tensor", "from_numpy", "tril_indices",
    "triu_indices", "empty_strided", "normal", "bartlett_window", "hann_window", "hamming_window",
    "blackman_window", "kaiser_window",
})
# the factories that convert data they are given (rather than make a tensor from sizes alone):
# what they make is input the program read, not state the code builds
DATA_FACTORIES = frozenset({"tensor", "as_tensor", "from_numpy", "normal"})
SIZE_FACTORIES = FACTORIES - DATA_FACTORIES
SCALAR_ATTRS = frozenset({
    "shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "names",
    "training", "is_leaf", "is_sparse", "is_quantized", "is_meta", "itemsize", "nbytes",
})
VIEW_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "real", "imag", "grad"})
SCALAR_METHODS = frozenset({
    "size", "dim", "numel", "nelement", "element_size", "stride", "data_ptr", "item", "tolist",
    "numpy", "is_contiguous", "is_floating_point", "is_complex", "get_device", "storage_offset",
    "__len__", "type", "keys",
})
# no arguments: a full reduction gives a 0-dim tensor, which meets any device
REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "norm", "all", "any", "std", "var",
                        "amax", "amin", "median", "logsumexp", "count_nonzero"})
# tensor methods whose tensor arguments must be on the tensor's device
BINARY_METHODS = frozenset({
    "add", "sub", "mul", "div", "matmul", "mm", "bmm", "masked_fill", "masked_fill_",
    "index_select", "gather", "scatter", "scatter_add", "lerp", "maximum", "minimum", "eq", "ne",
    "lt", "gt", "le", "ge", "add_", "sub_", "mul_", "div_", "index_add_", "scatter_add_",
    "masked_scatter_", "masked_select", "dot", "cross", "where",
})
SCALAR_BUILTINS = frozenset({
    "len", "int", "float", "bool", "str", "isinstance", "hasattr", "round", "print", "range",
    "type", "id", "hash", "repr", "callable", "issubclass", "format", "ord", "chr",
})
# torch functions that take tensors of several devices on purpose, or no tensors at all
MIXED_OK = frozenset({
    "torch.device", "torch.Size", "torch.is_tensor", "torch.save", "torch.load",
    "torch.manual_seed", "torch.no_grad", "torch.Generator", "torch.broadcast_shapes",
    "torch._assert", "torch.testing.assert_close", "torch.equal", "torch.allclose",
    "torch.set_grad_enabled", "torch.autograd.grad", "torch.autograd.backward",
    "torch.histogram", "torch.histogramdd",  # CPU-only ops
})
# Arguments that are host data on purpose, by position and keyword: the rest still meet.
# pack_padded_sequence wants its lengths on the CPU (PyTorch 1.7+): `.cpu()` there is the fix.
HOST_ARGUMENTS = {"torch.nn.utils.rnn.pack_padded_sequence": (1, "lengths")}
_BUILTINS = frozenset(dir(builtins))
SKIP_CALLEES = ("assert", "check", "print", "log", "warn", "_assert", "expect")
TENSOR_ANN = ("Tensor", "torch.Tensor", "Optional[Tensor]", "Tensor | None", "torch.Tensor | None",
              "Optional[torch.Tensor]", "FloatTensor", "LongTensor", "BoolTensor")
SCALAR_ANN = ("int", "float", "bool", "str", "Optional[int]", "Optional[float]", "int | None",
              "float | None")

Report = Callable[[str, ast.AST, str], None]


def _none_test(s: ast.If) -> str | None:
    """``if name is None:`` -> ``name``."""
    t = s.test
    if (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and len(t.ops) == 1
            and isinstance(t.ops[0], ast.Is) and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value is None):
        return t.left.id
    return None


def optional_params(fn: ast.FunctionDef) -> set[str]:
    args = fn.args
    out = set()
    for a, d in zip(reversed([*args.posonlyargs, *args.args]), reversed(args.defaults), strict=False):
        if isinstance(d, ast.Constant) and d.value is None:
            out.add(a.arg)
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if isinstance(d, ast.Constant) and d.value is None:
            out.add(a.arg)
    return out


def _zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0 and not isinstance(node.value, bool)


def _callee_text(call: ast.AST) -> str:
    func = call.func if isinstance(call, ast.Call) else call
    if isinstance(func, ast.Attribute) and not isinstance(func.value, ast.Name):
        return "." + func.attr  # x.detach().cpu() -> .cpu
    return _short(func)


def _short(node: ast.AST, limit: int = 40) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def join(a: Place | None, b: Place | None) -> Place | None:
    if a == b:
        return a
    if a is None or b is None:
        return None
    if (a.kind == "scalar" and not a.container) or a == EMPTY:
        return b if b.kind != "scalar" or a == EMPTY else a
    if (b.kind == "scalar" and not b.container) or b == EMPTY:
        return a if a.kind != "scalar" or b == EMPTY else b
    if a.kind == b.kind == "cpu":
        return a
    if a.kind == b.kind == "dev":
        return DEV if not (a.container or b.container) else Place("dev", container=True)
    return None


def element(p: Place | None) -> Place | None:
    if p is None or not p.container:
        return p
    return Place(p.kind, p.origin, p.how) if p.kind != "scalar" else SCALAR


def contained(p: Place | None) -> Place | None:
    if p is None:
        return None
    return Place(p.kind, p.origin, p.how, container=True)


_TENSOR_USES = frozenset({"device", "dtype", "shape", "view", "size", "reshape", "dim", "unsqueeze",
                          "permute", "transpose", "contiguous", "float", "ndim"})


def _tensor_params(src: SourceFile, fn: ast.FunctionDef, is_forward: bool) -> dict[str, Place | None]:
    """Each parameter's place: DEV for tensors (by annotation, by use, or a forward input)."""
    args = fn.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    defaults: dict[str, ast.expr] = {}
    for a, d in zip(reversed([*args.posonlyargs, *args.args]), reversed(args.defaults), strict=False):
        defaults[a.arg] = d
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if d is not None:
            defaults[a.arg] = d
    used_as_tensor: set[str] = set()
    names = {a.arg for a in params}
    moves_inputs = False
    start, end = fn.lineno - 1, fn.end_lineno or fn.lineno
    text = "\n".join(src.lines[start:end])
    follow_moves = not is_forward and (".to(" in text or ".cuda(" in text)
    for node in src.nodes(fn):  # one pass: evidence of tensors, and inputs moved here
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.attr in _TENSOR_USES:
                used_as_tensor.add(node.value.id)
        elif isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Tuple) and any(
                    isinstance(x, ast.Slice) or (isinstance(x, ast.Constant) and x.value in (None, ...))
                    for x in node.slice.elts):
                used_as_tensor.add(node.value.id)  # x[:, 0], x[..., None]: an array
        elif isinstance(node, ast.Assign) and follow_moves:
            if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node.value)):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Call) and follow_moves and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("to", "cuda") and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in names:
            moves_inputs = True  # the inputs were on the CPU: a preprocessing helper
    result: dict[str, Place | None] = {}
    for i, a in enumerate(params):
        if moves_inputs:
            result[a.arg] = None
            continue
        if i == 0 and a.arg in ("self", "cls"):
            result[a.arg] = None
            continue
        ann = ast.unparse(a.annotation) if a.annotation is not None else ""
        d = defaults.get(a.arg)
        if ann in TENSOR_ANN:
            result[a.arg] = DEV
        elif ann in SCALAR_ANN or (isinstance(d, ast.Constant) and d.value is not None):
            result[a.arg] = SCALAR
        elif a.arg in used_as_tensor or (is_forward and not ann and (d is None or isinstance(d, ast.Constant))):
            result[a.arg] = DEV
        else:
            result[a.arg] = None
    return result


class Evaluator:
    """Walks one function (or the module body) in order, with a place per local name."""

    def __init__(self, src: SourceFile, report: Report, params: dict[str, Place | None],
                 registered: set[str]) -> None:
        self.src = src
        self.report = report
        self.env: dict[str, Place | None] = dict(params)
        self.registered = registered  # self.<name> that are parameters / buffers / submodules
        self.optional: set[str] = set()  # parameters whose default is None

    # -- statements ---------------------------------------------------------------------------

    def run(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def _branch(self, *bodies: list[ast.stmt]) -> None:
        start = self.env
        ends = []
        for body in bodies:
            self.env = dict(start)
            self.run(body)
            ends.append(self.env)
        self._last_branch_ends = ends
        merged: dict[str, Place | None] = {}
        for key in set().union(*ends):
            value = ends[0].get(key, start.get(key))
            for e in ends[1:]:
                value = join(value, e.get(key, start.get(key)))
            merged[key] = value
        self.env = merged

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            v = self.expr(s.value)
            for t in s.targets:
                self.bind(t, v, s.value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.bind(s.target, self.expr(s.value), s.value)
        elif isinstance(s, ast.AugAssign):
            v = self.expr(s.value)
            if isinstance(s.target, ast.Name):
                cur = self.env.get(s.target.id)
                self.env[s.target.id] = self.meet(cur, v, s)
            else:
                self.expr(s.target)
        elif isinstance(s, ast.Expr | ast.Return):
            if s.value is not None:
                self.expr(s.value)
        elif isinstance(s, ast.If):
            self.expr(s.test)
            defaulted = _none_test(s)
            if defaulted is not None and defaulted in self.optional and not s.orelse:
                # `if state is None: state = torch.zeros(...)`: the path without the argument
                # is always possible (the caller omits it), so follow that path
                self._branch(s.body, [])
                self.env[defaulted] = self._last_branch_ends[0].get(defaulted)
            else:
                self._branch(s.body, s.orelse)
        elif isinstance(s, ast.For | ast.AsyncFor):
            it = self.expr(s.iter)
            self.bind_loop(s.target, s.iter, it)
            self._branch(s.body + s.orelse, [])
        elif isinstance(s, ast.While):
            self.expr(s.test)
            self._branch(s.body + s.orelse, [])
        elif isinstance(s, ast.With | ast.AsyncWith):
            for item in s.items:
                self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, None, None)
            self.run(s.body)
        elif isinstance(s, ast.Try):
            self._branch(s.body + s.orelse, *[h.body for h in s.handlers])
            self.run(s.finalbody)
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                if isinstance(t, ast.Name):
                    self.env.pop(t.id, None)

    def bind(self, target: ast.AST, v: Place | None, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = v
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                for t, e in zip(target.elts, value.elts, strict=True):
                    self.bind(t, self.expr(e) if not isinstance(e, ast.Starred) else None, e)
            else:
                for t in target.elts:
                    self.bind(t, element(v) if v is not None and v.kind != "scalar" else None, None)
        elif isinstance(target, ast.Subscript):
            self.expr(target.value)
            self.expr(target.slice)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, None, None)

    def bind_loop(self, target: ast.AST, iter_node: ast.AST, it: Place | None) -> None:
        if isinstance(iter_node, ast.Call) and isinstance(iter_node.func, ast.Name):
            name = iter_node.func.id
            if name == "range":
                self.bind(target, SCALAR, None)
                return
            if name == "enumerate" and iter_node.args and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                self.bind(target.elts[0], SCALAR, None)
                self.bind(target.elts[1], element(self.expr(iter_node.args[0])), None)
                return
            if name == "zip" and isinstance(target, ast.Tuple) and len(target.elts) == len(iter_node.args):
                for t, a in zip(target.elts, iter_node.args, strict=True):
                    self.bind(t, element(self.expr(a)), None)
                return
        self.bind(target, element(it) if it is not None and it.container else None, None)

    # -- expressions --------------------------------------------------------------------------

    def meet(self, a: Place | None, b: Place | None, node: ast.AST) -> Place | None:
        """Two operands of one op: report a CPU tensor meeting a DEV tensor."""
        if a is None or b is None:
            return None
        if a.container or b.container:
            return None
        for x, y in ((a, b), (b, a)):
            if x.kind == "cpu" and y.kind == "dev":
                self._report_cpu(x)
                return None
        if "dev" in (a.kind, b.kind):
            return DEV
        if a.kind == "cpu":
            return Place("cpu", a.origin, a.how)
        if b.kind == "cpu":
            return Place("cpu", b.origin, b.how)
        return SCALAR

    def _report_cpu(self, x: Place) -> None:
        if x.origin is None:
            return
        if x.how == "factory":
            self.report("SD401", x.origin, f"`{_callee_text(x.origin)}(...)`")
        elif x.how == "transfer":
            self.report("SD501", x.origin, f"`{_callee_text(x.origin)}()`")

    def expr(self, e: ast.AST | None) -> Place | None:
        if e is None:
            return None
        if isinstance(e, ast.Constant):
            return SCALAR
        if isinstance(e, ast.Name):
            return self.env.get(e.id)
        if isinstance(e, ast.Attribute):
            if e.attr in SCALAR_ATTRS:
                self.expr(e.value)
                return SCALAR
            if e.attr in VIEW_ATTRS:
                return self.expr(e.value)
            if isinstance(e.value, ast.Name) and e.value.id == "self":
                return DEV if e.attr in self.registered else None
            head = self.src.qual(e)
            if head is not None and not head.startswith("torch") and head.split(".")[0] in self.src.aliases.values():
                return SCALAR  # math.pi, np.newaxis
            base = self.expr(e.value)
            if e.attr in ("weight", "bias"):
                return base if base is not None and base.kind == "cpu" else DEV
            return None
        if isinstance(e, ast.Subscript):
            base = self.expr(e.value)
            idx = self._index(e.slice)
            if (base is not None and base.kind == "cpu" and not base.container
                    and idx is not None and idx.kind == "dev" and not idx.container):
                if base.how == "factory" and base.origin is not None:
                    self.report("SD901", e, f"`{_short(e.value)}` comes from "
                                f"`{_callee_text(base.origin)}(...)` on line {base.origin.lineno}")
                return None
            return element(base)
        if isinstance(e, ast.BinOp):
            return self.meet(self.expr(e.left), self.expr(e.right), e)
        if isinstance(e, ast.UnaryOp):
            return self.expr(e.operand)
        if isinstance(e, ast.Compare):
            left = self.expr(e.left)
            result = left
            for op, c in zip(e.ops, e.comparators, strict=True):
                right = self.expr(c)
                if isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn):
                    result = SCALAR
                else:
                    result = self.meet(left, right, e)
                left = right
            return result
        if isinstance(e, ast.BoolOp):
            vals = [self.expr(v) for v in e.values]
            out = vals[0]
            for v in vals[1:]:
                out = join(out, v)
            return out
        if isinstance(e, ast.IfExp):
            self.expr(e.test)
            return join(self.expr(e.body), self.expr(e.orelse))
        if isinstance(e, ast.List | ast.Tuple | ast.Set):
            out: Place | None = EMPTY
            for elt in e.elts:
                out = join(out, element(self.expr(elt)))
            return contained(out) if out is not None and out != EMPTY else (EMPTY if out == EMPTY else None)
        if isinstance(e, ast.Dict):
            out = EMPTY
            for k, v in zip(e.keys, e.values, strict=True):
                self.expr(k)
                out = join(out, element(self.expr(v)))
            return contained(out) if out is not None and out != EMPTY else (EMPTY if out == EMPTY else None)
        if isinstance(e, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            saved = dict(self.env)
            for g in e.generators:
                self.bind_loop(g.target, g.iter, self.expr(g.iter))
                for cond in g.ifs:
                    self.expr(cond)
            out = self.expr(e.elt)
            self.env = saved
            return contained(out) if out is not None else None
        if isinstance(e, ast.DictComp):
            return None
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, ast.Starred):
            return self.expr(e.value)
        if isinstance(e, ast.JoinedStr):
            return SCALAR
        return None

    def _index(self, s: ast.AST) -> Place | None:
        if isinstance(s, ast.Tuple):
            places = [self._index(x) for x in s.elts]
            return DEV if any(p is not None and p.kind == "dev" for p in places) else SCALAR
        if isinstance(s, ast.Slice):
            for x in (s.lower, s.upper, s.step):
                self.expr(x)
            return SCALAR
        return self.expr(s)

    def _device_place(self, d: ast.AST) -> Place | None:
        """The place of a tensor created with ``device=d``."""
        if const_str(d) is not None:
            return None if const_str(d).startswith("cpu") else DEV  # type: ignore[union-attr]
        if isinstance(d, ast.Call) and (self.src.qual(d.func) or "").endswith("torch.device"):
            if d.args and const_str(d.args[0]) is not None and const_str(d.args[0]).startswith("cpu"):  # type: ignore[union-attr]
                return None
        if isinstance(d, ast.Constant) and d.value is None:
            return None
        return DEV

    def call(self, c: ast.Call) -> Place | None:
        q = self.src.qual(c.func) or ""
        args = [self.expr(a) for a in c.args]
        kws = {k.arg: self.expr(k.value) for k in c.keywords}
        tail = q.rsplit(".", 1)[-1]
        if q.startswith("torch.") and q.count(".") == 1 and tail in FACTORIES:
            return self._factory(c, tail)
        if q.startswith("torch.") and tail.endswith("_like") and q.count(".") == 1:
            d = kwarg(c, "device")
            if d is not None:
                return self._device_place(d)
            return element(args[0]) if args else None
        if isinstance(c.func, ast.Attribute) and not q.startswith("torch."):
            return self._method(c, args, kws)
        if isinstance(c.func, ast.Name) and c.func.id in SCALAR_BUILTINS:
            return SCALAR
        if isinstance(c.func, ast.Name) and c.func.id in _BUILTINS and c.func.id not in self.env:
            return None  # setattr(x, name, t), max(...), sum(...): not a tensor op
        if q in HOST_ARGUMENTS:
            pos, keyword = HOST_ARGUMENTS[q]
            args = [a for i, a in enumerate(args) if i != pos]
            kws = {k: v for k, v in kws.items() if k != keyword}
        if q.startswith("torch."):
            if q in MIXED_OK or q.startswith(("torch.cuda.", "torch.jit.", "torch.distributed.",
                                              "torch.ops.")) or any(
                    part.startswith("_") for part in q.split(".")):
                return None  # internal ops take host metadata (sizes, offsets) on purpose
            places = [element(p) if p is not None and p.container else p
                      for p in [*args, *kws.values()]]
            return self._combine(places)
        # a call of a moved model with a CPU-created tensor: model and data apart
        callee = self.expr(c.func) if isinstance(c.func, ast.Name) else None
        if callee is not None and callee.model:
            # the model's input (its first argument): other arguments may be host data on
            # purpose, like the lengths pack_padded_sequence wants on the CPU
            a = args[0] if args else None
            if a is not None and a.kind == "cpu" and a.how == "factory" and not a.container:
                self.report("SD302", c, f"`{_short(c.args[0])}` into `{_short(c.func)}`")
            return DEV
        name = tail.lower()
        if name.startswith(SKIP_CALLEES):
            return None
        places = [p for p in [*args, *kws.values()] if p is not None and not p.container]
        if any(p.kind == "dev" for p in places):
            for p in places:
                if p.kind == "cpu" and p.how == "factory":
                    self._report_cpu(p)
            return DEV
        return None

    def _combine(self, places: list[Place | None]) -> Place | None:
        cpu = [p for p in places if p is not None and p.kind == "cpu"]
        dev = [p for p in places if p is not None and p.kind == "dev"]
        if cpu and dev:
            self._report_cpu(cpu[0])
            return None
        if dev:
            return DEV
        if cpu and all(p is not None for p in places):
            return Place("cpu", cpu[0].origin, cpu[0].how)
        return None

    def _factory(self, c: ast.Call, tail: str) -> Place | None:
        d = kwarg(c, "device")
        if kwarg(c, "out") is not None or any(k.arg is None for k in c.keywords):
            return None  # out= or **factory_kwargs: the device may be in there
        if d is not None:
            return self._device_place(d)
        if tail in ("tensor", "as_tensor"):
            if not c.args or not isinstance(c.args[0], ast.List | ast.Tuple | ast.ListComp):
                return SCALAR  # a scalar (0-dim) or an existing tensor: not certain
            return Place("cpu", c, "factory")
        if tail in ("zeros", "ones", "empty", "full", "rand", "randn") and c.args:
            first = c.args[0]
            if isinstance(first, ast.Tuple | ast.List) and not first.elts:
                return SCALAR
            if _zero(first) or (isinstance(first, ast.Tuple | ast.List) and any(_zero(x) for x in first.elts)):
                return SCALAR  # an empty placeholder (torch.empty([0])): nothing to compute with
        if tail in ("zeros", "ones", "empty", "full", "rand", "randn") and not c.args:
            size = kwarg(c, "size")
            if size is None or (isinstance(size, ast.Tuple | ast.List) and not size.elts):
                return SCALAR
        return Place("cpu", c, "factory")

    def _method(self, c: ast.Call, args: list[Place | None], kws: dict) -> Place | None:
        assert isinstance(c.func, ast.Attribute)
        name = c.func.attr
        recv_node = c.func.value
        if name in ("append", "extend", "insert", "add") and isinstance(recv_node, ast.Name):
            cur = self.env.get(recv_node.id)
            if cur is not None and cur.container and args:
                new = args[-1] if name != "extend" else element(args[-1])
                joined = join(element(cur) if cur != EMPTY else EMPTY, element(new))
                self.env[recv_node.id] = contained(joined) if joined not in (None, EMPTY) else (
                    EMPTY if joined == EMPTY else None)
            return SCALAR
        recv = self.expr(recv_node)
        if isinstance(recv_node, ast.Name) and recv_node.id == "self" and name in self.registered:
            # a submodule's forward (self.lstm(x, (h0, c0))): its tensor arguments, tuples
            # included, meet its parameters
            flat = [element(p) for p in args if p is not None]
            if any(p is not None and p.kind == "dev" for p in flat):
                for p in flat:
                    if p is not None and p.kind == "cpu" and p.how == "factory":
                        self._report_cpu(p)
                        break
            return DEV
        if isinstance(recv_node, ast.Attribute) and isinstance(recv_node.value, ast.Name) \
                and recv_node.value.id == "self" and recv_node.attr in self.registered:
            recv = DEV
        if name == "to":
            target = c.args[0] if c.args else kwarg(c, "device")
            if target is None:
                return recv
            s = const_str(target)
            if s is not None:
                return Place("cpu", c, "transfer") if s.startswith("cpu") else self._moved(recv)
            tq = self.src.qual(target) or ""
            if tq.startswith("torch.") and tq.rsplit(".", 1)[-1] in ("float", "float16", "float32",
                                                                    "float64", "half", "bfloat16",
                                                                    "long", "int", "bool", "double"):
                return recv
            if isinstance(target, ast.Attribute) and target.attr == "dtype":
                return recv
            if isinstance(target, ast.Call) and (self.src.qual(target.func) or "").endswith("torch.device"):
                if target.args and (const_str(target.args[0]) or "").startswith("cpu"):
                    return Place("cpu", c, "transfer")
            tp = args[0] if c.args else None
            if tp is not None and tp.kind == "cpu" and not tp.container:
                return None
            return self._moved(recv)
        if name == "cuda":
            return self._moved(recv)
        if name == "cpu":
            if recv is not None and recv.kind == "scalar":
                return SCALAR
            if self._reduced(recv_node):
                return SCALAR
            return Place("cpu", c, "transfer")
        if name in SCALAR_METHODS:
            return SCALAR
        if recv is None:
            if isinstance(recv_node, ast.Attribute) and isinstance(recv_node.value, ast.Name) \
                    and recv_node.value.id == "self":
                return None
            return DEV if any(a is not None and a.kind == "dev" and not a.container for a in args) else None
        if recv.kind == "scalar" or recv.container:
            return None
        if name in REDUCTIONS and not c.args and not c.keywords:
            return SCALAR if recv.kind == "cpu" else recv
        if name.startswith("new_"):
            return recv if recv.kind == "dev" else None
        if name in BINARY_METHODS:
            out: Place | None = recv
            for a in args:
                if a is not None and not a.container:
                    out = self.meet(out, a, c) if out is not None else None
            return out
        if name == "type_as":  # the other tensor's type, device included (torch.cuda.FloatTensor)
            return element(args[0]) if args else None
        if name in ("copy_", "view_as", "expand_as", "reshape_as"):
            return recv
        return Place(recv.kind, recv.origin, recv.how) if recv.kind != "dev" else DEV

    def _moved(self, recv: Place | None) -> Place:
        return Place("dev", model=recv is None or recv.model)

    def _reduced(self, node: ast.AST) -> bool:
        """``x.sum().cpu()``: the chain below ``.cpu()`` ends in a full reduction (0-dim)."""
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in REDUCTIONS and not node.args and not node.keywords:
                return True
            if node.func.attr in ("detach", "clone", "float", "double", "contiguous"):
                node = node.func.value
                continue
            return False
        return False


def registered_attrs(src: SourceFile, cls: ast.ClassDef) -> set[str]:
    """``self.<name>`` that hold parameters, buffers or submodules (they follow ``.to()``)."""
    names: set[str] = set()
    for node in src.nodes(cls):
        if isinstance(node, ast.Call):
            q = src.qual(node.func) or ""
            if q.endswith(("register_buffer", "register_parameter")) and node.args:
                s = const_str(node.args[0])
                if s:
                    names.add(s)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            q = src.qual(node.value.func) or ""
            if q.endswith("Parameter") or src.is_stateful_ctor(node.value):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        names.add(t.attr)
    return names


_CPU_SOURCE = re.compile(r"\b(" + "|".join(sorted(FACTORIES)) + r")\(|\.cpu\(|[\"']cpu")


def _has_cpu_source(src: SourceFile, node: ast.AST) -> bool:
    """Whether the lines of ``node`` can create a CPU tensor at all: without one no rule of
    this module can fire, and most functions are skipped on this test alone."""
    start, end = node.lineno - 1, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    return _CPU_SOURCE.search("\n".join(src.lines[start:end])) is not None


def check_values(src: SourceFile, report: Report) -> None:
    """Run the evaluator over the module body and every function of the file."""
    if _CPU_SOURCE.search(src.text) is None:
        return
    module_env = Evaluator(src, report, {}, set())
    # module-level names bound to a moved module: `model = Net().to(device)`
    module_env.run([s for s in src.tree.body if not isinstance(s, ast.FunctionDef | ast.ClassDef
                                                                     | ast.AsyncFunctionDef)])
    owner: dict[ast.AST, ast.ClassDef] = {}
    for info in src.classes.values():
        for m in info.methods.values():
            owner[m] = info.node
    registered_cache: dict[ast.ClassDef, set[str]] = {}
    for node in src.function_nodes:
        if not _has_cpu_source(src, node):
            continue
        cls = owner.get(node)
        is_module = cls is not None and cls.name in src.module_classes
        if cls is not None and cls not in registered_cache:
            registered_cache[cls] = registered_attrs(src, cls) if is_module else set()
        params = _tensor_params(src, node, is_forward=is_module and node.name == "forward")  # type: ignore[arg-type]
        ev = Evaluator(src, report, params, registered_cache.get(cls, set()) if cls else set())
        ev.optional = optional_params(node)  # type: ignore[arg-type]
        ev.run(node.body)
