"""From the failing statement to the culprit: which operand, where its value was made, why the
move missed it, and the fix.

The input is a parsed file, the line a traceback names, and what the message says (template,
op, argument, devices). The failing statement is found by AST (the whole statement, not the
line); the operands of the failing call are picked by the argument the message names
(``mat1``/``input`` the layer's input, ``weight``/``mat2`` the layer, ``index``, ``target``,
``mask``; both sides of an elementwise op); each operand's value is followed back through the
function (assignments, loop targets, unpacking), through ``self.`` attributes to ``__init__``
and the other methods of the class and its bases, and through helper objects the class builds
(``self._center.value`` -> ``Center.__init__``). The first origin that puts a value on the CPU
with no move after it is the culprit. Where the code does not decide, the answer says what was
read and what is still open; it never guesses a culprit.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .source import SourceFile, const_str, kwarg
from .values import FACTORIES

# methods that keep a tensor on its device: the value is its receiver's
_SAME_DEVICE = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "bool", "byte", "short", "char",
    "unsqueeze", "squeeze", "view", "view_as", "reshape", "reshape_as", "expand", "expand_as",
    "repeat", "permute", "transpose", "t", "contiguous", "clone", "detach", "flatten",
    "unflatten", "narrow", "select", "index_select", "gather", "flip", "roll", "chunk", "split",
    "squeeze_", "unsqueeze_", "type_as", "sum", "mean", "max", "min", "softmax", "log_softmax",
    "exp", "log", "abs", "sqrt", "pow", "clamp", "clamp_", "masked_fill", "requires_grad_",
    "detach_", "sigmoid", "tanh", "relu", "argmax", "argmin", "cumsum", "sort", "topk",
    "repeat_interleave", "to_dense", "add", "sub", "mul", "div", "matmul",
})
_MOVES = frozenset({"cuda", "to", "xpu", "mps", "npu"})
_LAYER_OPS = ("addmm", "linear", "mm", "matmul", "conv", "convolution", "cudnn", "embedding",
              "layer_norm", "batch_norm", "group_norm", "native_layer_norm", "mkldnn",
              "_convolution", "slow_conv", "thnn_conv", "lstm", "gru", "rnn", "bmm", "baddbmm")
_LAYER_ARGS = {"weight", "mat2", "bias", "running_mean", "running_var", "weight_arr"}
_INPUT_ARGS = {"mat1", "input", "self", "x"}
_LOSS_WORDS = ("loss", "criterion", "crit")
_LOADERS = ("loader", "dataloader", "dataset", "data_iter", "batches", "train_data", "val_data")
MAX_HOPS = 8
_TENSOR_METHODS = frozenset({
    "numpy", "cpu", "item", "tolist", "size", "dim", "numel", "masked_fill_", "fill_", "zero_",
    "copy_", "add_", "sub_", "mul_", "div_", "index_select", "gather", "scatter", "scatter_",
    "scatter_add", "scatter_add_", "masked_select", "nonzero", "where", "new_zeros", "new_ones",
    "new_tensor", "new_full", "new_empty", "eq", "ne", "lt", "gt", "le", "ge", "mm", "bmm",
    "matmul", "dot", "split", "chunk", "append", "extend", "items", "keys", "values", "get",
    "update", "format", "join", "backward", "step", "zero_grad", "load_state_dict", "state_dict",
    "parameters", "named_parameters", "modules", "children", "train", "eval", "apply",
})
# the legacy typed constructors make CPU tensors (``torch.cuda.FloatTensor`` is the GPU one)
_LEGACY_CPU_TYPES = frozenset({
    "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
    "IntTensor", "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor",
})


@dataclass
class Origin:
    """Where a value was made, and what that means for its device."""

    line: int
    code: str  # the source line, stripped
    kind: str  # what made it (see KINDS)
    path: str = ""


@dataclass
class Culprit:
    expr: str  # the operand as written in the failing statement
    role: str  # input, weight, index, target, mask, operand
    made_at: str  # "path:line  code"
    kind: str
    family: str
    why: str
    fix: str
    chain: list[str] = field(default_factory=list)  # the hops followed, in words


@dataclass
class Diagnosis:
    path: str
    line: int  # the statement's first line
    end_line: int
    statement: str
    function: str
    cls: str
    operands: list[str]
    culprit: Culprit | None
    read: list[str]  # what was read, in words
    open: str = ""  # what the code did not decide
    # (role, expression) of each operand, for a live program to look their values up
    operand_nodes: list[tuple[str, ast.AST]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "path": self.path, "line": self.line, "end_line": self.end_line,
            "statement": self.statement, "function": self.function, "class": self.cls,
            "operands": self.operands,
            "culprit": None if self.culprit is None else {
                "expr": self.culprit.expr, "role": self.culprit.role, "made_at": self.culprit.made_at,
                "kind": self.culprit.kind, "family": self.culprit.family, "why": self.culprit.why,
                "fix": self.culprit.fix, "chain": self.culprit.chain},
            "read": self.read, "open": self.open,
        }


# kind -> (family, why the move missed it, the fix); {e} is the culprit expression
KINDS: dict[str, tuple[str, str, str]] = {
    "factory-without-device": (
        "F4", "a tensor factory without `device=` creates its result on the default device (the CPU); "
              "nothing moves it before it meets the other operand",
        "create it where the other operand lives: pass `device=<other>.device` to the factory "
        "(or use `torch.zeros_like(...)`-style factories)"),
    "plain-tensor-attribute": (
        "F2", "the tensor is kept in a plain attribute, neither a parameter nor a buffer, so "
              "`Module.to()` never moves it",
        "register it: `self.register_buffer(\"name\", tensor)` (or `nn.Parameter` when it is trained)"),
    "helper-object-attribute": (
        "F2", "the tensor is an attribute of a helper object that is not an `nn.Module` submodule "
              "(or of a module that keeps it as a plain attribute), so the owner's `.to()` never reaches it",
        "keep the tensor in one place that `.to()` moves: a buffer of the module, read through the module"),
    "modules-in-plain-list": (
        "F2", "the layers sit in a plain Python list or dict, which `Module.to()` does not see",
        "wrap them: `nn.ModuleList([...])` / `nn.ModuleDict({...})`"),
    "layer-created-after-move": (
        "F1", "the layer was created after the model's `.to()`/`.cuda()`; a move only moves what "
              "exists at the time of the call",
        "create the layer before moving the model, or move it too: `layer.to(device)` "
        "(or build it with `device=`)"),
    "model-not-moved": (
        "F3", "the layer's parameters were never moved to the accelerator while its input was",
        "move the model before the forward pass: `model.to(device)`"),
    "input-not-moved": (
        "F3", "the value comes from the data (a batch, label or extra input) and is never moved "
              "to the model's device before it is used",
        "move it where the model is: `x = x.to(device)` (or `device=` when it is created)"),
    "torch-load-no-map-location": (
        "F7", "`torch.load` without `map_location` restores each tensor on the device it was saved "
              "from",
        "say where to restore: `torch.load(path, map_location=device)`"),
    "restored-on-cpu": (
        "F7", "the checkpoint is restored onto the CPU (`map_location=\"cpu\"`) and that value is "
              "used without moving it back",
        "move the restored value (or the model/optimizer that owns it) to the device after loading"),
    "transfer-to-cpu": (
        "F5", "a transfer to the CPU (`.cpu()`, `.numpy()`, `.tolist()`, `torch.from_numpy`) sits "
              "in the middle of the computation",
        "keep the computation on one device: drop the transfer, or move the result back with "
        "`.to(<other>.device)`"),
    "numpy-on-accelerator": (
        "F9", "NumPy works on host memory only: a tensor on the accelerator cannot be converted "
              "in place",
        "bring it to the host first: `tensor.detach().cpu().numpy()`"),
    "cpu-device-string": (
        "F3", "the value is placed on the CPU explicitly (`.to(\"cpu\")` or `device=\"cpu\"`)",
        "place it on the device of the other operand: `.to(<other>.device)`"),
}


# how surely a kind is a device bug wherever it is found (lower first): when one statement has
# two CPU operands, or a scan ranks statements, the sure kinds come first
KIND_RANK = {
    "plain-tensor-attribute": 0, "helper-object-attribute": 0, "modules-in-plain-list": 0,
    "layer-created-after-move": 0, "torch-load-no-map-location": 1, "restored-on-cpu": 2,
    "numpy-on-accelerator": 1, "transfer-to-cpu": 4, "cpu-device-string": 3,
    "factory-without-device": 4, "input-not-moved": 5, "model-not-moved": 5,
}


def _src(src: SourceFile, node: ast.AST) -> str:
    """The node's source text, one line. Cut from the file's lines (``ast.get_source_segment``
    splits the whole file on every call: quadratic over a scan of a large file)."""
    lo, hi = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    c0, c1 = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    text = ""
    if None not in (lo, hi, c0, c1) and 0 < lo <= hi <= len(src.lines):
        # col offsets are UTF-8 byte offsets
        lines = [line.encode("utf-8") for line in src.lines[lo - 1:hi]]
        if len(lines) == 1:
            text = lines[0][c0:c1].decode("utf-8", "replace")
        else:
            text = " ".join([lines[0][c0:].decode("utf-8", "replace"),
                             *(x.decode("utf-8", "replace") for x in lines[1:-1]),
                             lines[-1][:c1].decode("utf-8", "replace")])
    if not text:
        try:
            text = ast.unparse(node)
        except (ValueError, RecursionError):
            text = ""
    return " ".join(text.split())


def _line(src: SourceFile, lineno: int) -> str:
    return src.lines[lineno - 1].strip() if 0 < lineno <= len(src.lines) else ""


class FileIndex:
    """Parents and statements of one file, indexed once."""

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        self.parent: dict[int, ast.AST] = {}
        self._bindings: dict[int, dict[str, list[tuple[ast.AST, ast.AST | None]]]] = {}
        stack: list[ast.AST] = [src.tree]
        while stack:  # iterative: no recursion on the depth of the code
            node = stack.pop()
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node
                stack.append(child)

    def bindings(self, scope: ast.AST) -> dict[str, list[tuple[ast.AST, ast.AST | None]]]:
        """Every name bound in ``scope`` -> its (statement, value) pairs in line order, indexed
        once per scope (a scan asks for many names in the same function)."""
        found = self._bindings.get(id(scope))
        if found is not None:
            return found
        out: dict[str, list[tuple[ast.AST, ast.AST | None]]] = {}

        def put(name: str, node: ast.AST, value: ast.AST | None) -> None:
            out.setdefault(name, []).append((node, value))

        for n in ast.walk(scope):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    for name in _names(t):
                        for v in _bound(t, n.value, name):
                            put(name, n, v)
            elif isinstance(n, ast.AnnAssign | ast.AugAssign) and isinstance(n.target, ast.Name):
                put(n.target.id, n, n.value)
            elif isinstance(n, ast.For | ast.AsyncFor):
                for name in _names(n.target):
                    put(name, n, None)
            elif isinstance(n, ast.withitem) and n.optional_vars is not None:
                for name in _names(n.optional_vars):
                    put(name, n.context_expr, None)
        for pairs in out.values():
            pairs.sort(key=lambda p: p[0].lineno)
        self._bindings[id(scope)] = out
        return out

    def ancestors(self, node: ast.AST):
        cur = self.parent.get(id(node))
        while cur is not None:
            yield cur
            cur = self.parent.get(id(cur))

    def statement_at(self, line: int) -> ast.stmt | None:
        best: ast.stmt | None = None
        for node in ast.walk(self.src.tree):
            if not isinstance(node, ast.stmt):
                continue
            end = getattr(node, "end_lineno", node.lineno) or node.lineno
            if node.lineno <= line <= end:
                body_start = _body_start(node)
                if body_start is not None and line >= body_start:
                    continue  # the line is inside the body: a nested statement holds it
                if best is None or node.lineno >= best.lineno:
                    best = node
        return best


def _body_start(node: ast.stmt) -> int | None:
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        return body[0].lineno
    return None


def _header(stmt: ast.stmt) -> list[ast.AST]:
    """The parts of a statement that run at its own line (a compound statement's header)."""
    if isinstance(stmt, ast.For | ast.AsyncFor):
        return [stmt.iter]
    if isinstance(stmt, ast.If | ast.While):
        return [stmt.test]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return [i.context_expr for i in stmt.items]
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Try):
        return []
    return [stmt]


def _walk(nodes: list[ast.AST]) -> list[ast.AST]:
    out: list[ast.AST] = []
    for n in nodes:
        out.extend(ast.walk(n))
    return out


def _call_name(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return ""


def _is_module_call(src: SourceFile, call: ast.Call) -> bool:
    """``self.fc(x)``, ``model(x)``, ``self.layers[i](x)``: a call of an object, not a function."""
    f = call.func
    if isinstance(f, ast.Attribute):
        q = src.qual(f) or ""
        if q.startswith(("torch.", "F.", "numpy.", "np.", "math.")):
            return False
        if f.attr in _SAME_DEVICE or f.attr in _MOVES or f.attr in _TENSOR_METHODS:
            return False  # x.view(...), x.to(...): a tensor's method
        root = f.value
        while isinstance(root, ast.Attribute | ast.Subscript):
            root = root.value
        # self.fc(x), model.out_head(x), self.blocks[i](x); not an imported module's function
        return isinstance(root, ast.Name) and root.id not in src.aliases
    if isinstance(f, ast.Subscript):
        return True
    if isinstance(f, ast.Name):
        return f.id not in dir(__builtins__) and not f.id[:1].isupper() and f.id not in src.functions
    return False


def operands(src: SourceFile, nodes: list[ast.AST], facts: dict) -> list[tuple[str, ast.AST]]:
    """(role, expression) pairs of the failing call, the argument the message names first."""
    op = (facts.get("op_base") or facts.get("op") or "").lower().lstrip("_")
    arg = (facts.get("argument") or "").lower()
    template = facts.get("template") or ""
    every = _walk(nodes)
    calls = [n for n in every if isinstance(n, ast.Call)]
    found: list[tuple[str, ast.AST]] = []

    def add(role: str, node: ast.AST | None) -> None:
        if node is not None and all(node is not n for _, n in found):
            found.append((role, node))

    if template == "T11":  # can't convert cuda tensor to numpy
        for c in calls:
            if _call_name(c) == "numpy" and isinstance(c.func, ast.Attribute):
                add("numpy", c.func.value)
            elif (src.qual(c.func) or "").startswith(("numpy.", "np.")):
                for a in c.args:
                    add("numpy", a)
        return found
    if template in ("T10",):
        for c in calls:
            if (src.qual(c.func) or "").endswith("load"):
                add("load", c)
        return found
    if template == "T8":
        for c in calls:
            g = kwarg(c, "generator")
            if g is not None:
                add("generator", g)
        return found
    if template == "T6":
        for n in every:
            if isinstance(n, ast.Subscript):
                add("index", n.slice)
                add("indexed", n.value)
        return found

    layer_op = any(word in op for word in _LAYER_OPS) or template == "T3"
    for c in calls:
        name = _call_name(c)
        q = src.qual(c.func) or ""
        if arg == "index" and name in ("index_select", "gather", "scatter", "scatter_add", "index_add",
                                       "index_add_", "scatter_", "scatter_add_", "index_copy"):
            pos = 2 if q.startswith("torch.") else 1
            add("index", kwarg(c, "index") or (c.args[pos] if len(c.args) > pos else None))
        if arg in ("mask",) and name.startswith("masked_"):
            add("mask", kwarg(c, "mask") or (c.args[0] if c.args else None))
        if arg in ("target", "", "weight", "input", "self") or "loss" in op or "nll" in op or "entropy" in op:
            lossish = any(w in name.lower() for w in _LOSS_WORDS) or "loss" in q or "entropy" in name or "nll" in name
            if lossish and len(c.args) >= 2:
                add("target", kwarg(c, "target") or c.args[1])
                add("input", c.args[0])
    if layer_op or arg in _LAYER_ARGS or arg in ("indices",):
        for c in calls:
            if _is_module_call(src, c):
                if arg in _LAYER_ARGS:
                    add("weight", c.func)
                    if c.args:
                        add("input", c.args[0])
                else:
                    if c.args:
                        add("input", c.args[0])
                    add("weight", c.func)
            elif (src.qual(c.func) or "").startswith(("torch.nn.functional.", "torch.")) and \
                    _call_name(c) in ("linear", "conv1d", "conv2d", "conv3d", "embedding", "mm", "bmm",
                                      "matmul", "addmm", "layer_norm", "batch_norm"):
                roles = ("input", "weight", "bias") if _call_name(c) != "embedding" else ("index", "weight")
                for role, a in zip(roles, c.args, strict=False):
                    add(role, a)
    # elementwise ops and anything left: both sides of each binary op or comparison, the
    # elements of torch.cat/stack, the tensor arguments of torch.where
    # an indexed assignment (a[idx] = value) meets the tensor, the index and the value
    for n in nodes:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Subscript) \
                and not _mapping_store(n.targets[0]):
            target = n.targets[0]
            add("operand", n.value)
            add("index", target.slice)
            add("indexed", target.value)
    # (a nested op is not an operand itself: its own operands are, as the walk reaches them)
    for n in every:
        if isinstance(n, ast.BinOp) and not isinstance(n.op, ast.Mod):
            for side in (n.left, n.right):
                if not isinstance(side, ast.BinOp | ast.Compare):
                    add("operand", side)
        elif isinstance(n, ast.Compare):
            for side in (n.left, *n.comparators):
                if not isinstance(side, ast.BinOp | ast.Compare):
                    add("operand", side)
    for c in calls:
        name = _call_name(c)
        if name in ("cat", "stack", "concat", "hstack", "vstack") and c.args and \
                isinstance(c.args[0], ast.List | ast.Tuple):
            for e in c.args[0].elts:
                add("operand", e)
        elif name in ("where",) and len(c.args) == 3:
            for a in c.args:
                add("operand", a)
        elif isinstance(c.func, ast.Attribute) and name in (
                "add", "sub", "mul", "div", "matmul", "mm", "bmm", "add_", "sub_", "mul_", "div_",
                "copy_", "lerp", "lerp_", "masked_fill", "masked_fill_", "eq", "ne", "lt", "gt", "le", "ge",
                "maximum", "minimum", "dot") and c.args:
            add("operand", c.func.value)
            add("operand", c.args[0])
    if not found:
        # nothing matched the message's op: the arguments of the statement's calls are its operands
        for c in calls:
            q = src.qual(c.func) or ""
            if q in ("print", "len", "isinstance", "range", "enumerate", "zip", "getattr", "hasattr"):
                continue
            for a in c.args:
                if isinstance(a, ast.Name | ast.Attribute | ast.Subscript | ast.Call):
                    add("operand", a)
    return found


def _mapping_store(target: ast.Subscript) -> bool:
    """``state_dict[key] = value``, ``out["logits"] = ...``: a store into a dict, not a tensor."""
    if isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
        return True
    root = target.value
    while isinstance(root, ast.Attribute | ast.Subscript):
        root = root.value
    name = (root.id if isinstance(root, ast.Name) else "").lower()
    return any(w in name for w in ("dict", "state", "cache", "results", "outputs", "kwargs", "config"))


class _Tracer:
    """Follows one operand back to where its value was made."""

    def __init__(self, src: SourceFile, tree: FileIndex, stmt: ast.stmt, function: ast.AST | None,
                 cls: ast.ClassDef | None, path: str, facts: dict) -> None:
        self.src, self.tree, self.stmt, self.function, self.cls = src, tree, stmt, function, cls
        self.path, self.facts = path, facts
        self.chain: list[str] = []

    def where(self, node: ast.AST) -> str:
        return f"{self.path}:{node.lineno}  {_line(self.src, node.lineno)}"

    # returns (kind, node where it was made) or None when the value's device is unknown or follows
    # the model/the input
    def trace(self, e: ast.AST, before: int, scope: ast.AST | None, hops: int = 0,
              role: str = "") -> tuple[str, ast.AST] | None:
        if hops > MAX_HOPS:
            return None
        if isinstance(e, ast.Starred):
            e = e.value
        if isinstance(e, ast.Subscript):
            root = e.value
            while isinstance(root, ast.Subscript):
                root = root.value
            if isinstance(root, ast.Name) and _data_name(root.id) and role != "weight":
                if self._name(root.id, before, scope, hops + 1, role) is None:
                    return "input-not-moved", e  # an item of a dataset or batch, used as it comes
            return self.trace(e.value, before, scope, hops + 1, role)
        if isinstance(e, ast.Call):
            return self._call(e, before, scope, hops, role)
        if isinstance(e, ast.Name):
            return self._name(e.id, before, scope, hops, role)
        if isinstance(e, ast.Attribute):
            if e.attr in ("data", "T", "mT", "real", "imag"):
                return self.trace(e.value, before, scope, hops + 1, role)
            return self._attribute(e, before, scope, hops, role)
        if isinstance(e, ast.BinOp):
            return self.trace(e.left, before, scope, hops + 1, role) or \
                self.trace(e.right, before, scope, hops + 1, role)
        if isinstance(e, ast.IfExp):
            return self.trace(e.body, before, scope, hops + 1, role) or \
                self.trace(e.orelse, before, scope, hops + 1, role)
        if isinstance(e, ast.List | ast.Tuple) and role == "weight":
            return None
        return None

    def _call(self, c: ast.Call, before: int, scope: ast.AST | None, hops: int,
              role: str) -> tuple[str, ast.AST] | None:
        q = self.src.qual(c.func) or ""
        name = _call_name(c)
        tail = q.rsplit(".", 1)[-1]
        if q.startswith("torch.") and q.count(".") == 1 and tail in FACTORIES:
            dev = kwarg(c, "device")
            if dev is None and not any(k.arg is None for k in c.keywords):
                if tail == "from_numpy":
                    return "transfer-to-cpu", c
                if tail in ("tensor", "as_tensor") and c.args and not isinstance(
                        c.args[0], ast.List | ast.Tuple | ast.Constant | ast.ListComp):
                    # torch.tensor(x) of a tensor keeps nothing of x's device either: still the CPU
                    return "factory-without-device", c
                return "factory-without-device", c
            if dev is not None and const_str(dev) in ("cpu",):
                return "cpu-device-string", c
            return None
        if q.startswith("torch.") and q.count(".") == 1 and tail in _LEGACY_CPU_TYPES:
            return "factory-without-device", c  # torch.FloatTensor(...): the legacy CPU constructors
        if q in ("torch.load",) or (name == "load" and q.endswith("torch.load")):
            ml = kwarg(c, "map_location")
            if ml is None and len(c.args) < 2:
                return "torch-load-no-map-location", c
            if ml is not None and const_str(ml) == "cpu":
                return "restored-on-cpu", c
            return None
        if q.startswith(("numpy.", "np.")):
            return None  # a NumPy array meeting a tensor is another error (T11), not a CPU operand
        if isinstance(c.func, ast.Attribute):
            if name == "cpu":
                return "transfer-to-cpu", c
            if name == "to":
                target = c.args[0] if c.args else kwarg(c, "device")
                if target is not None and const_str(target) == "cpu":
                    return "cpu-device-string", c
                return None  # moved to a device: follows the model
            if name in _MOVES:
                return None
            if name in _SAME_DEVICE:
                return self.trace(c.func.value, before, scope, hops + 1, role)
            # a method of self defined in this class: what it returns
            if isinstance(c.func.value, ast.Name) and c.func.value.id == "self" and self.cls is not None:
                fn = self._method(self.cls, name)
                if fn is not None:
                    return self._returns(fn, hops, role)
        if isinstance(c.func, ast.Name) and c.func.id in self.src.functions:
            return self._returns(self.src.functions[c.func.id], hops, role)
        return None

    def _returns(self, fn: ast.AST, hops: int, role: str) -> tuple[str, ast.AST] | None:
        for n in ast.walk(fn):
            if isinstance(n, ast.Return) and n.value is not None:
                self.chain.append(f"returned by `{getattr(fn, 'name', '?')}` at line {n.lineno}")
                found = self.trace(n.value, n.lineno + 1, fn, hops + 1, role)
                if found:
                    return found
        return None

    def _definitions(self, name: str, before: int, scope: ast.AST) -> list[tuple[ast.AST, ast.AST | None]]:
        """(statement, value) pairs binding ``name`` in ``scope`` before line ``before``."""
        return [(n, v) for n, v in self.tree.bindings(scope).get(name, []) if n.lineno < before]

    def _name(self, name: str, before: int, scope: ast.AST | None, hops: int,
              role: str) -> tuple[str, ast.AST] | None:
        scopes = [s for s in (scope, self.src.tree) if s is not None]
        for sc in scopes:
            defs = self._definitions(name, before, sc)
            if not defs:
                continue
            stmt, value = defs[-1]
            self.chain.append(f"`{name}` assigned at line {stmt.lineno}")
            if isinstance(stmt, ast.For | ast.AsyncFor):
                it = _src(self.src, stmt.iter).lower()
                if any(w in it for w in _LOADERS):
                    return "input-not-moved", stmt
                return None
            if value is None:
                return None
            if value is _UNPACKED:
                # x, y = batch: x is what batch holds
                source = stmt.value  # type: ignore[union-attr]
                found = self.trace(source, stmt.lineno, sc, hops + 1, role)
                if found is None and isinstance(source, ast.Name):
                    return None
                return found
            return self.trace(value, stmt.lineno, sc, hops + 1, role)
        # a parameter of the function: where the caller got it is another frame's question
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            names = [a.arg for a in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs)]
            if name in names:
                self.chain.append(f"`{name}` is a parameter of `{scope.name}`")
        return None

    def _method(self, cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
        for c in self._class_chain(cls):
            for item in c.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name:
                    return item  # type: ignore[return-value]
        return None

    def _class_chain(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        chain, seen = [cls], {cls.name}
        i = 0
        while i < len(chain):
            for b in chain[i].bases:
                bname = b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                info = self.src.classes.get(bname)
                if info is not None and bname not in seen:
                    seen.add(bname)
                    chain.append(info.node)
            i += 1
        return chain

    def _attribute(self, e: ast.Attribute, before: int, scope: ast.AST | None, hops: int,
                   role: str) -> tuple[str, ast.AST] | None:
        # self.X or self.X.Y
        path: list[str] = []
        cur: ast.AST = e
        while isinstance(cur, ast.Attribute):
            path.append(cur.attr)
            cur = cur.value
        path.reverse()
        if not (isinstance(cur, ast.Name) and cur.id == "self" and self.cls is not None):
            if isinstance(cur, ast.Name) and role == "weight":
                return self._module_object(cur.id, path, before, scope)
            return None
        return self._self_attr(self.cls, path, hops, role)

    def _self_attr(self, cls: ast.ClassDef, path: list[str], hops: int, role: str) -> tuple[str, ast.AST] | None:
        attr = path[0]
        assigns: list[tuple[ast.FunctionDef, ast.AST, ast.AST]] = []
        registered = False
        for c in self._class_chain(cls):
            for fn in c.body:
                if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for n in ast.walk(fn):
                    if isinstance(n, ast.Call) and _call_name(n) in ("register_buffer", "register_parameter") \
                            and n.args and const_str(n.args[0]) == attr:
                        registered = True
                    if isinstance(n, ast.Assign | ast.AnnAssign):
                        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                        for t in targets:
                            if isinstance(t, ast.Attribute) and t.attr == attr and \
                                    isinstance(t.value, ast.Name) and t.value.id == "self" and n.value is not None:
                                assigns.append((fn, n, n.value))
        if registered and len(path) == 1:
            return None  # a buffer or parameter: moves with the module
        if role == "weight" and len(path) == 1:
            replaced = self._replaced_after_move(path[0])
            if replaced is not None:
                return replaced
        if not assigns:
            return None
        fn, stmt, value = assigns[0]
        self.chain.append(f"`self.{'.'.join(path)}` set in `{cls.name}.{fn.name}` at line {stmt.lineno}")
        qual = self.src.qual(value.func) if isinstance(value, ast.Call) else None
        if len(path) > 1 and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                and value.func.id in self.src.classes:
            helper = self.src.classes[value.func.id].node
            inner = self._self_attr(helper, path[1:], hops + 1, role)
            if inner is not None:
                kind, node = inner
                if kind in ("plain-tensor-attribute", "factory-without-device"):
                    return "helper-object-attribute", node
                return inner
            return None
        if role == "weight" and len(path) == 1:
            if isinstance(value, ast.List | ast.Dict | ast.ListComp | ast.DictComp):
                return "modules-in-plain-list", stmt
            if fn.name != "__init__" and isinstance(value, ast.Call) and qual and qual.startswith("torch.nn."):
                return "layer-created-after-move", stmt
            return None
        if isinstance(value, ast.Call) and qual and qual.startswith("torch.nn.") and "Parameter" in qual:
            return None
        if isinstance(value, ast.List | ast.Dict | ast.ListComp) and role == "weight":
            return "modules-in-plain-list", stmt
        found = self.trace(value, stmt.lineno, fn, hops + 1, role)
        if found is not None and found[0] == "factory-without-device" and len(path) == 1:
            return "plain-tensor-attribute", stmt
        return found

    def _replaced_after_move(self, attr: str) -> tuple[str, ast.AST] | None:
        """``model.out_head = nn.Linear(...)`` after ``model.to(device)``, anywhere in the file:
        the layer a class's ``forward`` reads as ``self.out_head`` was swapped after the move."""
        scopes: list[ast.AST] = [self.src.tree, *self.src.function_nodes]
        for sc in scopes:
            body = sc.body if isinstance(sc, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef) else []
            moved: dict[str, int] = {}
            for stmt in body:
                for n in ast.walk(stmt):
                    if isinstance(n, ast.Call) and _call_name(n) in _MOVES and isinstance(n.func, ast.Attribute) \
                            and isinstance(n.func.value, ast.Name):
                        moved.setdefault(n.func.value.id, n.lineno)
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                    q = self.src.qual(stmt.value.func) or ""
                    for t in stmt.targets:
                        if isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name) \
                                and t.value.id != "self" and q.startswith("torch.nn.") \
                                and t.value.id in moved and moved[t.value.id] < stmt.lineno:
                            self.chain.append(f"`{t.value.id}.{attr}` replaced at line {stmt.lineno}, "
                                              f"after the move at line {moved[t.value.id]}")
                            return "layer-created-after-move", stmt
        return None

    def _module_object(self, name: str, path: list[str], before: int, scope: ast.AST | None
                       ) -> tuple[str, ast.AST] | None:
        """``model.fc(x)`` at module level: a layer assigned after ``model.to(...)``."""
        for sc in [s for s in (scope, self.src.tree) if s is not None]:
            moved = None
            for n in ast.walk(sc):
                if isinstance(n, ast.Call) and _call_name(n) in _MOVES and isinstance(n.func, ast.Attribute) \
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == name and n.lineno < before:
                    moved = n if moved is None or n.lineno < moved.lineno else moved
            if moved is None:
                continue
            for n in ast.walk(sc):
                if isinstance(n, ast.Assign) and moved.lineno < n.lineno < before:
                    for t in n.targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == name:
                            return "layer-created-after-move", n
        return None


def _data_name(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in ("dataset", "loader", "_data", "data_", "batch")) or low in ("data", "samples")


_UNPACKED = ast.Constant(value=None)  # marker: the name is one element of an unpacked value


def _bound(target: ast.AST, value: ast.AST, name: str) -> list[ast.AST]:
    if isinstance(target, ast.Name):
        return [value] if target.id == name else []
    if isinstance(target, ast.Tuple | ast.List):
        if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
            out: list[ast.AST] = []
            for t, v in zip(target.elts, value.elts, strict=True):
                out += _bound(t, v, name)
            return out
        return [_UNPACKED] if _binds(target, name) else []
    return []


def _names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _binds(target: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def diagnose(src: SourceFile, line: int, facts: dict, *, path: str = "",
             tree: FileIndex | None = None, stmt: ast.stmt | None = None) -> Diagnosis | None:
    """The failing statement at ``line`` and, when the code decides it, its culprit.
    (``tree`` and ``stmt``: a scan over a whole file indexes it once.)"""
    tree = tree or FileIndex(src)
    stmt = stmt or tree.statement_at(line)
    if stmt is None:
        return None
    function = next((a for a in tree.ancestors(stmt) if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)), None)
    cls = next((a for a in tree.ancestors(stmt) if isinstance(a, ast.ClassDef)), None)
    header = _header(stmt)
    ops = operands(src, header, facts)
    end = stmt.end_lineno or stmt.lineno
    if isinstance(stmt, ast.For | ast.If | ast.While | ast.With) and header:
        end = max(getattr(h, "end_lineno", stmt.lineno) or stmt.lineno for h in header)
    where = path or src.path
    text = " ".join(_src(src, h) for h in header) if header else _line(src, stmt.lineno)
    fn_name = getattr(function, "name", "") if function is not None else ""
    read = [f"{where}:{stmt.lineno}" + (f"-{end}" if end != stmt.lineno else "")
            + (f" in `{cls.name}.{fn_name}`" if cls is not None and fn_name else f" in `{fn_name}`" if fn_name else "")]
    diag = Diagnosis(path=where, line=stmt.lineno, end_line=end, statement=text, function=fn_name,
                     cls=cls.name if cls is not None else "", operands=[_src(src, n) for _, n in ops],
                     culprit=None, read=read, operand_nodes=ops)
    wanted = _cpu_role(facts)
    found: list[tuple[tuple[int, int], Culprit]] = []
    for role, node in ops:
        tracer = _Tracer(src, tree, stmt, function, cls, where, facts)
        if role in ("numpy",):
            kind, made = "numpy-on-accelerator", node
        elif role == "load" and isinstance(node, ast.Call):
            hit = tracer.trace(node, stmt.lineno, function, role=role)
            if hit is None:
                continue
            kind, made = hit
        else:
            hit = tracer.trace(node, stmt.lineno, function, role=role)
            if hit is None:
                continue
            kind, made = hit
        family, why, fix = KINDS[kind]
        expr = _src(src, node)
        if kind == "layer-created-after-move" or kind == "modules-in-plain-list":
            role = "weight"
        culprit = Culprit(expr=expr, role=role, made_at=tracer.where(made), kind=kind, family=family,
                          why=why, fix=fix.replace("<other>", _other(ops, node, src)), chain=tracer.chain)
        if wanted and role in _SIDES and role not in wanted and _SIDES[role] & wanted:
            continue  # the message puts this side on the accelerator: its CPU origin was moved later
        rank = (0 if (wanted and role in wanted) else 1, KIND_RANK.get(kind, 6))
        found.append((rank, culprit))
    if found:
        found.sort(key=lambda p: p[0])
        diag.culprit = found[0][1]
    else:
        diag.open = ("the operands' values come from " + ", ".join(f"`{o}`" for o in diag.operands[:4])
                     + "; this file does not show where one of them was put on the other device "
                     "(it may be a parameter given by the caller, or made in another file)") \
            if diag.operands else "the statement's operands could not be matched to the message"
    return diag


def _other(ops: list[tuple[str, ast.AST]], node: ast.AST, src: SourceFile) -> str:
    for _, n in ops:
        if n is not node:
            text = _src(src, n)
            if text and len(text) <= 40:
                return text
    return "other"


# the two sides of a layer call: when the message says which is on the CPU, the other is not
_SIDES = {"input": {"weight"}, "weight": {"input"}, "index": {"indexed", "weight"}, "target": {"input"}}


def _cpu_role(facts: dict) -> set[str]:
    """Which role the message puts on the CPU, when it says so (T2's named argument, T3's weight)."""
    arg = (facts.get("argument") or "").lower()
    arg_dev = (facts.get("argument_device") or "").lower()
    roles: set[str] = set()
    if arg and arg_dev.startswith("cpu"):
        if arg in _LAYER_ARGS:
            roles.add("weight")
        elif arg in _INPUT_ARGS:
            roles.add("input")
        else:
            roles.add(arg)
    message = (facts.get("message") or "").lower()
    # T3: "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor)": the weight is the CPU one
    if "weight type (torch.floattensor)" in message or "weight type (torch.halftensor)" in message:
        roles.add("weight")
    if "input type (torch.floattensor)" in message or "input type (torch.halftensor)" in message:
        roles.add("input")
    return roles
