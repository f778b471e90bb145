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
import builtins
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .project import ClassRef, Project
from .source import SourceFile, const_str, kwarg
from .values import FACTORIES

# methods that keep a tensor on its device: the value is its receiver's
_SAME_DEVICE = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "bool", "byte", "short", "char",
    "unsqueeze", "squeeze", "view", "view_as", "reshape", "reshape_as", "expand", "expand_as",
    "repeat", "permute", "transpose", "t", "contiguous", "clone", "detach", "flatten",
    "unflatten", "narrow", "select", "index_select", "gather", "flip", "roll", "chunk", "split",
    "squeeze_", "unsqueeze_", "sum", "mean", "max", "min", "softmax", "log_softmax",
    "exp", "log", "abs", "sqrt", "pow", "clamp", "clamp_", "masked_fill", "requires_grad_",
    "detach_", "sigmoid", "tanh", "relu", "argmax", "argmin", "cumsum", "sort", "topk",
    "repeat_interleave", "to_dense", "add", "sub", "mul", "div", "matmul",
    # in place, or clearly a tensor's own method: the result is on the receiver's device (names
    # a module attribute often has -- norm, std, diag -- stay out: `self.norm(x)` is a layer)
    "fill_", "zero_", "uniform_", "normal_", "random_", "bernoulli_", "exponential_", "add_",
    "sub_", "mul_", "div_", "masked_fill_", "index_fill_", "scatter_", "scatter_add_", "copy_",
    "clamp_min", "clamp_max", "clamp_min_", "clamp_max_", "abs_", "neg_", "reciprocal", "rsqrt",
    "log1p", "expm1", "cumprod", "triu", "tril", "movedim", "swapaxes", "nan_to_num",
    "pin_memory", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor",
})
_MOVES = frozenset({"cuda", "to", "xpu", "mps", "npu"})
# torch dtypes: `.to(torch.float16)` changes the type, not the device
_DTYPES = frozenset({
    "float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "int8", "int16",
    "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble",
})
# torch functions whose result is not on their first argument's device
_NOT_FOLLOWING = frozenset({"load", "save", "device", "manual_seed", "set_default_device", "from_numpy",
                            "as_tensor", "tensor", "Generator", "no_grad", "compile", "jit", "is_tensor",
                            "numel", "typename", "get_default_dtype", "set_grad_enabled"})
_LAYER_OPS = ("addmm", "linear", "mm", "matmul", "conv", "convolution", "cudnn", "embedding",
              "layer_norm", "batch_norm", "group_norm", "native_layer_norm", "mkldnn",
              "_convolution", "slow_conv", "thnn_conv", "lstm", "gru", "rnn", "bmm", "baddbmm")
_LAYER_ARGS = {"weight", "mat2", "bias", "running_mean", "running_var", "weight_arr"}
_INPUT_ARGS = {"mat1", "input", "self", "x"}
# index methods whose receiver is written into (``out.index_add_(dim, index, source)``)
_INDEXED_METHODS = frozenset({"index_add_", "index_add", "scatter_add_", "scatter_add", "scatter_", "scatter",
                              "index_copy_", "index_copy", "index_fill_", "index_put_", "scatter_reduce_",
                              "scatter_reduce", "gather", "index_select", "masked_scatter_", "put_"})
_LOSS_WORDS = ("loss", "criterion", "crit")
_LOADERS = ("loader", "dataloader", "dataset", "data_iter", "batches", "train_data", "val_data")
MAX_HOPS = 8
# said of a method that cannot know the device its result belongs on: its call is the culprit
CALL_MUST_MOVE = "has no device to create its result on: the call must move it"
_BUILTINS = frozenset(dir(builtins))  # print(...), len(...): not a module call
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
    # (role, name) of the operands whose value is a parameter of the function: the caller's frame
    # says where it came from (diagnose_caller)
    parameters: list[tuple[str, str]] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)  # the function's parameters, self first

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
    "loss-weight-on-cpu": (
        "F3", "the loss keeps its `weight`/`pos_weight` as a buffer made on the CPU, and the loss "
              "module itself is never moved with the model",
        "move the loss with the model: `criterion = criterion.to(device)` (or make the weights "
        "with `device=`)"),
    "optimizer-state-restored-before-move": (
        "F7", "`optimizer.load_state_dict` casts the restored state to the device its parameters "
              "are on at that moment: they were still on the CPU, and the model moved afterwards (a "
              "move changes the parameters, never the optimizer's state)",
        "move the model before building the optimizer and loading its state (`model.to(device)` "
        "first)"),
    "hardcoded-device-index": (
        "F8", "the value is placed on a device fixed in the code (`\"cuda:0\"`, `.cuda(0)`), not on "
              "the device the rest of the computation is on (under DDP, each rank's own GPU)",
        "place it on the device of the other operand: `.to(<other>.device)` (under DDP, the rank's "
        "device: `.to(rank)`)"),
    "cpu-device-string": (
        "F3", "the value is placed on the CPU explicitly (`.to(\"cpu\")` or `device=\"cpu\"`)",
        "place it on the device of the other operand: `.to(<other>.device)`"),
    "generator-on-other-device": (
        "F9", "a random-number generator draws only for tensors on its own device, and this op "
              "runs on the other one",
        "make the generator where the op's tensors are: `torch.Generator(device=x.device)`"),
    "move-result-discarded": (
        "F3", "`tensor.to(device)` returns a moved copy and leaves the tensor where it is (only a "
              "module's `.to()` moves it in place); the copy was dropped",
        "keep the result: `x = x.to(device)`"),
    "model-moved-to-cpu": (
        "F6", "the model was moved to the accelerator, then a later phase (saving a checkpoint, "
              "an evaluation on the CPU) moved it to the CPU with `.cpu()` and nothing moved it back",
        "save a copy without moving the model (`model.state_dict()` as it is, or "
        "`{k: v.cpu() for k, v in model.state_dict().items()}`), or move it back after: `model.to(device)`"),
    "device-argument-omitted": (
        "F3", "the object that made the value places it on the device it was built with, and it "
              "was built without its device argument: the default (the CPU) was used",
        "pass the device when building it: `<param>=device`"),
    "device-read-before-move": (
        "F3", "the value was moved to a device read from the model (`next(model.parameters()).device`) "
              "before the model itself was moved: that device is the CPU",
        "read the device after moving the model, or keep one device for both: `device = "
        "torch.device(...)`, then `model.to(device)` and `x.to(device)`"),
    "made-on-cpu": (
        "F4", "the running program made this tensor on the CPU at that line, and nothing moved it "
              "to the accelerator before it met the other operand",
        "make it where the other operand lives (`device=<other>.device`) or move it there: "
        "`.to(<other>.device)`"),
}


# how surely a kind is a device bug wherever it is found (lower first): when one statement has
# two CPU operands, or a scan ranks statements, the sure kinds come first
KIND_RANK = {
    "plain-tensor-attribute": 0, "helper-object-attribute": 0, "modules-in-plain-list": 0,
    "layer-created-after-move": 0, "torch-load-no-map-location": 1, "restored-on-cpu": 2,
    "numpy-on-accelerator": 1, "transfer-to-cpu": 4, "cpu-device-string": 3,
    "factory-without-device": 4, "input-not-moved": 5, "model-not-moved": 5, "loss-weight-on-cpu": 3,
    "optimizer-state-restored-before-move": 1, "hardcoded-device-index": 1, "made-on-cpu": 5,
    "device-argument-omitted": 3, "model-moved-to-cpu": 2, "device-read-before-move": 2,
    "move-result-discarded": 1, "generator-on-other-device": 1,
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


call_name = _call_name  # (for the live diagnosis: a frame's function calling a helper)


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
        return f.id not in _BUILTINS and not f.id[:1].isupper() and f.id not in src.functions
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
    if arg == "index" and ("index_select" in op or "embedding" in op):
        # an embedding layer lowers to index_select: its input is the index, its table the weight
        for c in calls:
            if _is_module_call(src, c) and c.args:
                add("index", c.args[0])
                add("weight", c.func)
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
        elif isinstance(n, ast.AugAssign):
            # total += x.sum(): the running total is the other operand (a counter made on the CPU)
            add("operand", n.target)
            add("operand", n.value)
    # (a nested op is not an operand itself: its own operands are, as the walk reaches them)
    sides: list[ast.AST] = []
    for n in every:
        if isinstance(n, ast.BinOp) and not isinstance(n.op, ast.Mod):
            sides += [side for side in (n.left, n.right) if not isinstance(side, ast.BinOp | ast.Compare)]
        elif isinstance(n, ast.Compare):
            sides += [side for side in (n.left, *n.comparators) if not isinstance(side, ast.BinOp | ast.Compare)]
    # in the order Python evaluates them: in `self.scale * x + self.shift` the product fails first,
    # so of two operands on the CPU `self.scale` is the one the error is about
    for side in sorted(sides, key=lambda e: (e.lineno, e.col_offset)):
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
        elif isinstance(c.func, ast.Attribute) and name in _INDEXED_METHODS:
            # out.index_add_(0, idx, src): the tensor written into is an operand like the others
            # (a buffer made without device= while the index and source are on the GPU)
            add("self", c.func.value)
            for a in c.args[1:]:
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


# A live frame's view of its names: bound(name, module_scope) says whether ``name`` has a value
# in the frame now (its globals for the module's scope). A binding whose value reads a name of
# the scope that has none did not run (a branch not taken).
Bound = Callable[[str, bool], bool]


class _Tracer:
    """Follows one operand back to where its value was made."""

    def __init__(self, src: SourceFile, tree: FileIndex, stmt: ast.stmt | None, function: ast.AST | None,
                 cls: ast.ClassDef | None, path: str, facts: dict, project: Project | None = None) -> None:
        self.src, self.tree, self.stmt, self.function, self.cls = src, tree, stmt, function, cls
        self.path, self.facts, self.project = path, facts, project
        self.chain: list[str] = []
        self.sources: list[SourceFile] = []  # other files read on the way (shared with sub-tracers)
        self.parameter: str = ""  # the operand's value is this parameter of the function
        self.moves_skipped = False  # (a live program says the value is on the CPU)
        # the message names two accelerators (cuda:1 and cuda:0): a device index fixed in the
        # code is an origin
        self.other_gpu = _two_accelerators(facts)
        self.bound: Bound | None = None
        # id(function) -> {parameter: (argument, the caller's scope, its line)} for the calls of
        # local functions the trace went into
        self.arguments: dict[int, dict[str, tuple[ast.AST, ast.AST | None, int, _Tracer]]] = {}

    def where(self, node: ast.AST) -> str:
        """``path:line  code`` of the node, in whichever file read on the way holds it."""
        for src in self.sources:
            if id(node) in _index_of(src).parent:
                return f"{src.path}:{node.lineno}  {_line(src, node.lineno)}"
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
        if isinstance(e, ast.List | ast.Tuple):
            # states = (torch.zeros(...), torch.zeros(...)): an LSTM's (h, c) given as one value
            for elt in e.elts:
                found = self.trace(elt, before, scope, hops + 1, role)
                if found is not None:
                    return found
            return None
        if isinstance(e, ast.ListComp | ast.GeneratorExp) and e.generators:
            # [s.detach() for s in states]: the element, or else what the loop runs over
            return self.trace(e.elt, before, scope, hops + 1, role) or \
                self.trace(e.generators[0].iter, before, scope, hops + 1, role)
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
            if dev is not None and self.other_gpu and _fixed_index(dev):
                return "hardcoded-device-index", c
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
        if ((q.startswith("torch.") and q.count(".") == 1) or q.startswith("torch.nn.functional.")) \
                and tail not in _NOT_FOLLOWING and c.args:
            # torch.triu(x), torch.exp(x), F.pad(x, ...), torch.cat([a, b]): on the device of the
            # tensor given (the first one, or the first element of a list given)
            first = c.args[0]
            if isinstance(first, ast.ListComp | ast.GeneratorExp):
                return self.trace(first.elt, before, scope, hops + 1, role)
            if isinstance(first, ast.List | ast.Tuple) and first.elts:
                found = None
                for e in first.elts:
                    found = self.trace(e, before, scope, hops + 1, role)
                    if found is not None:
                        return found
                return None
            return self.trace(first, before, scope, hops + 1, role)
        if const_str(kwarg(c, "return_tensors")) == "pt":
            # a tokenizer's or processor's output: new tensors on the CPU, for the caller to move
            return "input-not-moved", c
        if q.startswith(("numpy.", "np.")):
            return None  # a NumPy array meeting a tensor is another error (T11), not a CPU operand
        if q.startswith("torch.nn.") and q.endswith("Loss"):
            # nn.CrossEntropyLoss(weight=w): the loss's buffer is w, where w was made
            for key in ("weight", "pos_weight"):
                w = kwarg(c, key)
                if w is not None and self.trace(w, before, scope, hops + 1, "operand") is not None:
                    return "loss-weight-on-cpu", c
            return None
        if isinstance(c.func, ast.Attribute):
            if name == "cpu":
                return "transfer-to-cpu", c
            if name == "to":
                target = c.args[0] if c.args else kwarg(c, "device")
                if target is not None and const_str(target) == "cpu":
                    return "cpu-device-string", c
                if (target is None and kwarg(c, "dtype") is not None) or _is_dtype(self.src, target):
                    return self.trace(c.func.value, before, scope, hops + 1, role)  # a cast only
                if self.other_gpu and target is not None and _fixed_index(target):
                    return "hardcoded-device-index", c
                return None  # moved to a device: follows the model
            if name == "type_as" and c.args:
                return self.trace(c.args[0], before, scope, hops + 1, role)  # takes the other's device
            if name == "type" and c.args:
                # `.type(torch.LongTensor)` / `.type("torch.FloatTensor")`: a CPU type
                t = self.src.qual(c.args[0]) or const_str(c.args[0]) or ""
                if t.startswith("torch.") and not t.startswith("torch.cuda.") and t.rsplit(".", 1)[-1] in _LEGACY_CPU_TYPES:
                    return "cpu-device-string", c
                return None
            if name in _MOVES:
                if name == "cuda" and self.other_gpu and c.args and _fixed_index(c.args[0]):
                    return "hardcoded-device-index", c
                return None
            if name in _SAME_DEVICE:
                return self.trace(c.func.value, before, scope, hops + 1, role)
            # a method of self defined in this class (or a base): what it returns
            if isinstance(c.func.value, ast.Name) and c.func.value.id == "self" and self.cls is not None:
                found = self._method(self.cls, name)
                if found is not None:
                    fn, ref = found
                    return self._in(ref).returns(fn, hops, role)
            if isinstance(c.func.value, ast.Name) and c.func.value.id != "self":
                found = self._object_method(c.func.value.id, name, before, scope)
                if found is not None:
                    fn, ref = found
                    hit = self._in(ref).returns(fn, hops, role)
                    if hit is not None and hit[0] == "factory-without-device" and not _knows_device(fn):
                        # h = rec.initHidden(): the method cannot know the device; its caller moves
                        # the result, or does not
                        self.chain.append(f"`{name}` {CALL_MUST_MOVE}")
                        return hit[0], c
                    return hit
        if isinstance(c.func, ast.Name) and c.func.id in self.src.functions:
            fn = self.src.functions[c.func.id]
            self._bind(fn, c, scope, before)
            return self.returns(fn, hops, role)
        found_fn = self._function_elsewhere(c)
        if found_fn is not None:
            fn, other = found_fn
            sub = self._in_file(other)
            sub._bind(fn, c, scope, before, caller=self)
            return sub.returns(fn, hops, role)
        return None

    def _function_elsewhere(self, c: ast.Call) -> tuple[ast.FunctionDef, SourceFile] | None:
        """``batchify(...)`` imported from another file of the project, or ``data.batchify(...)``
        of a module imported from one: that function."""
        if self.project is None:
            return None
        if isinstance(c.func, ast.Name):
            found = self.project.find_function(self.src, c.func.id)
            return found if found is not None and found[1] is not self.src else None
        if isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name):
            module = self.project.module_of(self.src, c.func.value.id)
            if module is not None and c.func.attr in module.functions:
                return module.functions[c.func.attr], module
        return None

    def _in_file(self, src: SourceFile, cls: ast.ClassDef | None = None) -> _Tracer:
        """The tracer for another file (a class of it, or its module-level functions), sharing
        the chain."""
        sub = _Tracer(src, _index_of(src), None, None, cls, src.path, self.facts, self.project)
        for known in (self.src, src):  # where() must find the nodes of both files
            if known not in self.sources:
                self.sources.append(known)
        sub.chain, sub.sources, sub.arguments = self.chain, self.sources, self.arguments
        return sub

    def _object_method(self, obj: str, method: str, before: int,
                       scope: ast.AST | None) -> tuple[ast.FunctionDef, ClassRef] | None:
        """``rec.initHidden()`` with ``rec = RecognitionRNN(...).to(device)`` in this scope or the
        module's: that class's method."""
        for sc in [s for s in (scope, self.src.tree) if s is not None]:
            defs = self._definitions(obj, before, sc)
            if not defs:
                continue
            value = defs[-1][1]
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and value.func.attr in (*_MOVES, "eval", "train", "float", "half", "double"):
                value = value.func.value
            if not isinstance(value, ast.Call):
                return None
            cname = value.func.id if isinstance(value.func, ast.Name) else \
                value.func.attr if isinstance(value.func, ast.Attribute) else ""
            ref = self._class_ref(self.src, cname) if cname else None
            if ref is None and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) \
                    and self.project is not None:
                # net = model.RNNModel(...) after `import model`: the class in the module's file
                module = self.project.module_of(self.src, value.func.value.id)
                ref = self._class_ref(module, cname) if module is not None else None
            if ref is None:
                return None
            return self._method(ref.node, method, ref.src)
        return None

    def _scope_of(self, node: ast.AST) -> ast.AST:
        return next((a for a in self.tree.ancestors(node) if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)),
                    self.src.tree)

    def _bind(self, fn: ast.AST, call: ast.Call, scope: ast.AST | None, line: int,
              caller: _Tracer | None = None) -> None:
        """Remember what ``call`` (in ``caller``'s file, this one by default) passes ``fn``'s
        parameters, for a trace that reaches one."""
        caller = caller or self
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if params[:1] == ["self"] and isinstance(call.func, ast.Attribute):
            params = params[1:]
        bound: dict[str, tuple[ast.AST, ast.AST | None, int, _Tracer]] = {}
        for name, arg in zip(params, call.args, strict=False):
            if isinstance(arg, ast.Starred):
                break
            bound[name] = (arg, scope, line, caller)
        for k in call.keywords:
            if k.arg:
                bound[k.arg] = (k.value, scope, line, caller)
        self.arguments[id(fn)] = bound

    def _unpacked_call(self, stmt: ast.AST, name: str, hops: int, role: str) -> tuple[str, ast.AST] | None:
        """``x, y = f(...)`` with ``f`` defined here (or a method of self): the element of what
        ``f`` returns at ``name``'s place."""
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        call = getattr(stmt, "value", None)
        if not (isinstance(target, ast.Tuple | ast.List) and isinstance(call, ast.Call)):
            return None
        index = next((i for i, t in enumerate(target.elts) if isinstance(t, ast.Name) and t.id == name), None)
        if index is None:
            return None
        fn, tracer = None, self
        if isinstance(call.func, ast.Name) and call.func.id in self.src.functions:
            fn = self.src.functions[call.func.id]
        elif isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
                and call.func.value.id == "self" and self.cls is not None:
            found = self._method(self.cls, call.func.attr)
            if found is not None:
                fn, ref = found
                tracer = self._in(ref)
        if fn is None:
            return None
        tracer._bind(fn, call, self._scope_of(stmt), stmt.lineno, caller=self)
        for n in ast.walk(fn):
            if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple) and len(n.value.elts) == len(target.elts):
                self.chain.append(f"`{name}` is item {index} of what `{getattr(fn, 'name', '?')}` returns at line {n.lineno}")
                moved = tracer._returned_unmoved(fn, n, index)
                if moved is not None:
                    # return x, y after x = x.to(device): the function moves the other parts only
                    self.chain.append(f"`{getattr(fn, 'name', '?')}` moves the other items at line {moved.lineno}, not this one")
                    return "input-not-moved", moved
                hit = tracer.trace(n.value.elts[index], n.lineno + 1, fn, hops + 1, role)
                if hit is not None:
                    return hit
        return None

    def _never_ran(self, stmt: ast.AST, value: ast.AST | None, scope: ast.AST) -> bool:
        """The live frame has no value for a name of this scope that the binding's value reads
        (``samp_trajs = checkpoint[...]`` with no ``checkpoint``): the binding did not run."""
        if value is None or value is _UNPACKED or self.bound is None:
            return False
        own = self.tree.bindings(scope)
        module = scope is self.src.tree
        inner = {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        inner |= {a.arg for n in ast.walk(value) if isinstance(n, ast.Lambda) for a in n.args.args}
        for n in ast.walk(value):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in own and n.id not in inner \
                    and not self.bound(n.id, module) and not _deleted(scope, n.id):
                return True
        return False

    def _moves_of(self, names: list[str], scope: ast.AST, lo: int, hi: int) -> ast.AST | None:
        """The first ``n = n.to(...)`` of one of ``names`` in ``scope`` between the lines."""
        for other in names:
            for n, v in self.tree.bindings(scope).get(other, []):
                if lo < n.lineno < hi and _is_move(v) and _receiver_is(v, other):
                    return n
        return None

    def _sibling_moved_later(self, stmt: ast.AST, name: str, before: int, scope: ast.AST) -> ast.AST | None:
        """``x, y = batch`` (or ``for x, y in loader``) followed by ``x = x.to(device)`` before
        ``before``, and ``name`` (y) never moved: the move of its sibling."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            target = stmt.target
        else:
            return None
        if not isinstance(target, ast.Tuple | ast.List):
            return None
        siblings = [t.id for t in target.elts if isinstance(t, ast.Name) and t.id != name]
        if not siblings or len(siblings) == len(target.elts):
            return None
        if any(stmt.lineno < n.lineno < before for n, _ in self.tree.bindings(scope).get(name, [])):
            return None  # name has a move of its own (one a live program says did not run)
        return self._moves_of(siblings, scope, stmt.lineno, before)

    def _returned_unmoved(self, fn: ast.AST, ret: ast.Return, index: int) -> ast.AST | None:
        """``return x, y`` where the function moved ``x`` (``x = x.to(device)``) but never ``y``."""
        elts = ret.value.elts  # type: ignore[union-attr]
        mine = elts[index]
        if not isinstance(mine, ast.Name):
            return None
        if any(_is_move(v) or (v is not None and v is not _UNPACKED and _moved_inside(v))
               for n, v in self.tree.bindings(fn).get(mine.id, []) if n.lineno < ret.lineno):
            return None
        others = [e.id for i, e in enumerate(elts) if i != index and isinstance(e, ast.Name)]
        return self._moves_of(others, fn, getattr(fn, "lineno", 0), ret.lineno)

    def returns(self, fn: ast.AST, hops: int, role: str) -> tuple[str, ast.AST] | None:
        for n in ast.walk(fn):
            if isinstance(n, ast.Return) and n.value is not None:
                self.chain.append(f"returned by `{getattr(fn, 'name', '?')}` at line {n.lineno}")
                found = self.trace(n.value, n.lineno + 1, fn, hops + 1, role)
                if found:
                    return found
        return None

    def _in(self, ref: ClassRef) -> _Tracer:
        """The tracer for a class of another file (its own lines, its own path), sharing the chain."""
        if ref.src is not self.src:
            return self._in_file(ref.src, ref.node)
        sub = _Tracer(self.src, self.tree, self.stmt, self.function, ref.node, self.path, self.facts, self.project)
        sub.bound = self.bound
        sub.chain, sub.sources, sub.arguments = self.chain, self.sources, self.arguments
        return sub

    def _definitions(self, name: str, before: int, scope: ast.AST) -> list[tuple[ast.AST, ast.AST | None]]:
        """(statement, value) pairs binding ``name`` in ``scope`` before line ``before``."""
        return [(n, v) for n, v in self.tree.bindings(scope).get(name, []) if n.lineno < before]

    def _name(self, name: str, before: int, scope: ast.AST | None, hops: int,
              role: str) -> tuple[str, ast.AST] | None:
        scopes = [s for s in (scope, self.src.tree) if s is not None]
        for sc in scopes:
            defs = self._definitions(name, before, sc)
            if self.moves_skipped:
                # the live value is on the CPU: a move written before this line did not run
                defs = [(n, v) for n, v in defs if not _is_move(v)]
            if self.bound is not None and (sc is self.function or sc is self.src.tree):
                defs = [(n, v) for n, v in defs if not self._never_ran(n, v, sc)]
            if not defs:
                continue
            stmt, value = defs[-1]
            self.chain.append(f"`{name}` assigned at line {stmt.lineno}")
            dropped = _discarded_move(sc, name, stmt.lineno, before) if role != "weight" else None
            if dropped is not None:
                # x.to(device) on a line of its own: a tensor's move returns a new tensor (only a
                # module's moves it in place), so x itself stays where it was
                self.chain.append(f"`{_src(self.src, dropped.value)}` at line {dropped.lineno} drops the moved copy")
                return "move-result-discarded", dropped
            if _sibling_moved(stmt, name):
                # x, y = x.to(device), y: the statement moves the batch's other parts, not this one
                return "input-not-moved", stmt
            moved = self._sibling_moved_later(stmt, name, before, sc)
            if moved is not None:
                # x, y = next(iter(loader)); x = x.to(device): the batch's other part was moved
                self.chain.append(f"`{name}` is unpacked with values moved at line {moved.lineno}; it is not")
                return "input-not-moved", moved
            if isinstance(stmt, ast.For | ast.AsyncFor):
                it = _src(self.src, stmt.iter).lower()
                if any(w in it for w in _LOADERS):
                    return "input-not-moved", stmt
                return None
            if value is None:
                return None
            if value is _UNPACKED:
                # x, y = get_batch(): x is what the function returns in that place
                source = stmt.value  # type: ignore[union-attr]
                found = self._unpacked_call(stmt, name, hops, role)
                if found is not None:
                    return found
                # x, y = batch: x is what batch holds
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
                bound = self.arguments.get(id(scope), {}).get(name)
                if bound is not None:
                    # a function this trace entered through a call it read: the argument given
                    arg, caller_scope, line, caller = bound
                    return caller.trace(arg, line, caller_scope, hops + 1, role)
                if scope is self.function:
                    self.parameter = name
        return None

    def _method(self, cls: ast.ClassDef, name: str, src: SourceFile | None = None
                ) -> tuple[ast.FunctionDef, ClassRef] | None:
        """``name`` defined in ``cls`` (a class of ``src``, this file by default) or its bases."""
        for ref in self._class_chain(cls, src):
            for item in ref.node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name:
                    return item, ref  # type: ignore[return-value]
        return None

    def _class_ref(self, src: SourceFile, name: str) -> ClassRef | None:
        info = src.classes.get(name)
        if info is not None:
            return ClassRef(info.node, src)
        if self.project is not None:
            return self.project.find_class(src, name)
        return None

    def _class_chain(self, cls: ast.ClassDef, src: SourceFile | None = None) -> list[ClassRef]:
        """The class (of ``src``, this file by default) and its bases, those of other files of
        the project included."""
        chain, seen = [ClassRef(cls, src or self.src)], {cls.name}
        i = 0
        while i < len(chain):
            ref = chain[i]
            for b in ref.node.bases:
                bname = b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                if not bname or bname in seen:
                    continue
                found = self._class_ref(ref.src, bname)
                if found is not None:
                    seen.add(bname)
                    chain.append(found)
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
        return self.self_attr(self.cls, path, hops, role)

    def self_attr(self, cls: ast.ClassDef, path: list[str], hops: int, role: str,
                  known: dict[str, object] | None = None) -> tuple[str, ast.AST] | None:
        """``self.a.b`` read in ``cls``: where it was set (``known``: the constant arguments
        the class was built with, which decide ``if flag:`` branches of its methods)."""
        if hops > MAX_HOPS:
            return None
        attr = path[0]
        assigns: list[tuple[ast.FunctionDef, ast.AST, ast.AST, ClassRef]] = []
        registered = False
        for ref in self._class_chain(cls):
            for fn in ref.node.body:
                if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                if fn.name == attr and any(_decorator_name(d) == "property" for d in fn.decorator_list):
                    # a property: what its getter returns
                    self.chain.append(f"`{attr}` is a property of `{ref.node.name}`")
                    sub = self._in(ref)
                    found = sub.returns(fn, hops + 1, role) if len(path) == 1 else None
                    if found is None and len(path) == 1:
                        found = sub.property_attr(fn, hops + 1, role, known)
                    return found
                live = _live_nodes(fn, known)
                for n in live:
                    if isinstance(n, ast.Call) and _call_name(n) in ("register_buffer", "register_parameter") \
                            and n.args and const_str(n.args[0]) == attr:
                        registered = True
                    if isinstance(n, ast.Assign | ast.AnnAssign):
                        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                        for t in targets:
                            if isinstance(t, ast.Attribute) and t.attr == attr and \
                                    isinstance(t.value, ast.Name) and t.value.id == "self" and n.value is not None:
                                assigns.append((fn, n, n.value, ref))
        if registered and len(path) == 1:
            return None  # a buffer or parameter: moves with the module
        if role == "weight" and len(path) == 1:
            replaced = self._replaced_after_move(path[0])
            if replaced is not None:
                return replaced
        if not assigns:
            return None
        fn, stmt, value, ref = assigns[0]
        sub = self._in(ref)
        self.chain.append(f"`self.{'.'.join(path)}` set in `{ref.node.name}.{fn.name}` at line {stmt.lineno}")
        qual = ref.src.qual(value.func) if isinstance(value, ast.Call) else None
        if len(path) > 1 and isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            helper = sub._class_ref(ref.src, value.func.id)
            if helper is not None:
                inner = sub._in(helper).self_attr(helper.node, path[1:], hops + 1, role,
                                                  known=_call_arguments(value, helper.node))
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
        found = sub.trace(value, stmt.lineno, fn, hops + 1, role)
        if found is not None and found[0] == "factory-without-device" and len(path) == 1 \
                and self._is_module(cls):
            return "plain-tensor-attribute", stmt  # (a plain object has no buffers: its factory is the bug)
        return found

    def _is_module(self, cls: ast.ClassDef) -> bool:
        """Is ``cls`` an ``nn.Module`` (a base not found counts as one: it may well be)?"""
        for ref in self._class_chain(cls):
            for b in ref.node.bases:
                q = ref.src.qual(b) or ""
                tail = q.rsplit(".", 1)[-1]
                if q.startswith("torch.nn.") or tail in ("Module", "LightningModule") or "Module" in tail:
                    return True
                name = b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                if name and name != "object" and self._class_ref(ref.src, name) is None:
                    return True
        return False

    def property_attr(self, fn: ast.FunctionDef, hops: int, role: str,
                      known: dict[str, object] | None) -> tuple[str, ast.AST] | None:
        """A property returning ``self.x``: where ``self.x`` was set."""
        for n in ast.walk(fn):
            if isinstance(n, ast.Return) and isinstance(n.value, ast.Attribute) \
                    and isinstance(n.value.value, ast.Name) and n.value.value.id == "self" and self.cls is not None:
                found = self.self_attr(self.cls, [n.value.attr], hops + 1, role, known)
                if found is not None and found[0] == "factory-without-device":
                    return "plain-tensor-attribute", found[1]
                return found
        return None

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


def _discarded_move(scope: ast.AST, name: str, after: int, before: int) -> ast.Expr | None:
    """A statement ``name.to(...)`` / ``name.cuda()`` whose result nothing keeps, between the
    binding of ``name`` (line ``after``) and its use (line ``before``)."""
    for n in ast.walk(scope):
        if isinstance(n, ast.Expr) and after <= n.lineno < before and isinstance(n.value, ast.Call):
            f = n.value.func
            if isinstance(f, ast.Attribute) and f.attr in ("to", "cuda") and isinstance(f.value, ast.Name) \
                    and f.value.id == name:
                return n
    return None


def _sibling_moved(stmt: ast.AST, name: str) -> bool:
    """``x, y = x.to(device), y``: a tuple assignment that moves some of its values, not ``name``'s."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple)
            and isinstance(stmt.value, ast.Tuple) and len(stmt.value.elts) == len(stmt.targets[0].elts)):
        return False
    mine = [v for t, v in zip(stmt.targets[0].elts, stmt.value.elts, strict=True) if isinstance(t, ast.Name) and t.id == name]
    others = [v for t, v in zip(stmt.targets[0].elts, stmt.value.elts, strict=True) if not (isinstance(t, ast.Name) and t.id == name)]
    return bool(mine) and not any(_is_move(v) or _moved_inside(v) for v in mine) and any(_moved_inside(v) for v in others)


def _knows_device(fn: ast.AST) -> bool:
    """The function is given a device or a tensor to take one from: a parameter named like one,
    or ``self.device``/``<param>.device`` read in its body."""
    args = getattr(fn, "args", None)
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)] if args is not None else []
    if any("device" in n.lower() for n in names):
        return True
    # `weight = next(self.parameters())`: the module's own parameters say where it lives
    return any((isinstance(n, ast.Attribute) and n.attr == "device")
               or (isinstance(n, ast.Call) and _call_name(n) in ("parameters", "buffers")) for n in ast.walk(fn))


def _deleted(scope: ast.AST, name: str) -> bool:
    """``del name`` somewhere in the scope: a missing value says nothing then."""
    return any(isinstance(n, ast.Delete) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
               for n in ast.walk(scope))


def _receiver_is(call: ast.AST, name: str) -> bool:
    """``name.to(...)`` / ``name.cuda()``: the move is of ``name`` itself."""
    f = getattr(call, "func", None)
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == name


def _moved_inside(value: ast.AST) -> bool:
    """The expression moves its value somewhere along its chain (``x.pin_memory().to(device)``)."""
    return any(_is_move(n) for n in ast.walk(value) if isinstance(n, ast.Call))


_INDEXED_DEVICE = re.compile(r"^(cuda|xpu|npu|hpu|mps):\d+$")


def _fixed_index(node: ast.AST) -> bool:
    """``"cuda:0"`` or ``0`` written in the code as the device."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return True
    if isinstance(node, ast.Call) and _call_name(node) == "device" and node.args:
        return _fixed_index(node.args[0]) or (len(node.args) > 1 and _fixed_index(node.args[1]))
    return bool(_INDEXED_DEVICE.match(const_str(node) or ""))


def _two_accelerators(facts: dict) -> bool:
    devices = {d for d in facts.get("devices") or [] if isinstance(d, str)}
    return len(devices) >= 2 and not any(d.startswith("cpu") for d in devices)


def _is_move(value: ast.AST | None) -> bool:
    """``x.cuda()``, ``x.to(device)`` (not ``.to("cpu")`` nor a cast)."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _MOVES):
        return False
    target = value.args[0] if value.args else kwarg(value, "device")
    return not (target is not None and const_str(target) == "cpu")


def origin_on_cpu(src: SourceFile, line: int, name: str, facts: dict, *, role: str = "operand", path: str = "",
                  project: Project | None = None, bound: Bound | None = None) -> Culprit | None:
    """Where the value of ``name`` at ``line`` came from, given that it is on the CPU there (a
    live program says so): the moves the code holds before that line did not run."""
    tree = _index_of(src)
    stmt = tree.statement_at(line)
    if stmt is None:
        return None
    function = next((a for a in tree.ancestors(stmt) if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)), None)
    cls = next((a for a in tree.ancestors(stmt) if isinstance(a, ast.ClassDef)), None)
    tracer = _Tracer(src, tree, stmt, function, cls, path or src.path, facts, project)
    tracer.moves_skipped = True
    tracer.bound = bound
    hit = tracer.trace(ast.Name(id=name), stmt.lineno, function, role=role)
    if hit is None:
        return None
    kind, made = hit
    family, why, fix = KINDS[kind]
    chain = ["the value is on the CPU here, so no move before this line ran", *tracer.chain]
    return Culprit(expr=name, role=role, made_at=tracer.where(made), kind=kind, family=family, why=why,
                   fix=fix.replace("<other>", "other"), chain=chain)


def origin_at(src: SourceFile, line: int, expr: str, facts: dict, *, role: str = "operand", path: str = "",
              project: Project | None = None) -> Culprit | None:
    """The culprit made at ``line``, where a live program saw the CPU tensor ``expr`` made: what
    the statement there does (a factory without ``device=``, a transfer, a load, a loop over a
    loader), or plainly that it made the tensor on the CPU."""
    tree = _index_of(src)
    stmt = tree.statement_at(line)
    if stmt is None:
        return None
    function = function_at(src, line)
    cls = next((a for a in tree.ancestors(stmt) if isinstance(a, ast.ClassDef)), None)
    lo, hi = stmt.lineno, stmt.end_lineno or stmt.lineno
    header = _header(stmt)
    kind = None
    if isinstance(stmt, ast.For | ast.AsyncFor):
        kind = "input-not-moved"  # a batch the loop's loader collated on the CPU
    for call in [n for n in _walk(header) if isinstance(n, ast.Call)] if kind is None else []:
        tracer = _Tracer(src, tree, stmt, function, cls, path or src.path, facts, project)
        hit = tracer._call(call, lo, function, 0, role)
        if hit is not None and lo <= getattr(hit[1], "lineno", 0) <= hi and hit[0] in _MADE_HERE:
            kind = hit[0]
            break
    kind = kind or "made-on-cpu"
    family, why, fix = KINDS[kind]
    where = f"{path or src.path}:{lo}  {_line(src, lo)}"
    return Culprit(expr=expr, role=role, made_at=where, kind=kind, family=family, why=why,
                   fix=fix.replace("<other>", "other"),
                   chain=[f"the running program made `{expr}` on the CPU at {path or src.path}:{line}"])


def function_at(src: SourceFile, line: int) -> ast.AST | None:
    """The innermost function holding ``line``, or None at module level."""
    tree = _index_of(src)
    stmt = tree.statement_at(line)
    if stmt is None:
        return None
    return next((a for a in tree.ancestors(stmt) if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)), None)


# what a statement's own call can make on the CPU (origin_at)
_MADE_HERE = frozenset({"factory-without-device", "transfer-to-cpu", "torch-load-no-map-location",
                        "restored-on-cpu", "cpu-device-string", "input-not-moved"})


def binding_of(src: SourceFile, line: int, name: str) -> ast.AST | None:
    """The last statement binding ``name`` before ``line``, in the scope that holds the line."""
    tree = _index_of(src)
    stmt = tree.statement_at(line)
    if stmt is None:
        return None
    scope = next((a for a in tree.ancestors(stmt) if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)), src.tree)
    for sc in (scope, src.tree):
        defs = [n for n, _ in tree.bindings(sc).get(name, []) if n.lineno <= stmt.lineno and n is not stmt]
        if defs:
            return defs[-1]
    return None


def _index_of(src: SourceFile) -> FileIndex:
    """A file's index, built once (a class of another file is read by many operands)."""
    found = getattr(src, "_culprit_index", None)
    if found is None:
        found = FileIndex(src)
        src._culprit_index = found  # type: ignore[attr-defined]
    return found


def _is_dtype(src: SourceFile, node: ast.AST | None) -> bool:
    q = src.qual(node) if node is not None else None
    return bool(q) and q.startswith("torch.") and q.count(".") == 1 and q.rsplit(".", 1)[-1] in _DTYPES


def _decorator_name(d: ast.AST) -> str:
    if isinstance(d, ast.Call):
        d = d.func
    return d.attr if isinstance(d, ast.Attribute) else d.id if isinstance(d, ast.Name) else ""


def _call_arguments(call: ast.Call, cls: ast.ClassDef) -> dict[str, object]:
    """The constant arguments a class is built with, by ``__init__``'s parameter names (the
    defaults of those not given included): ``Center(size, _register_buffer=False)``."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is None:
        return {}
    params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]
    known: dict[str, object] = {}
    defaults = init.args.defaults
    for name, default in zip(params[len(params) - len(defaults):], defaults, strict=False):
        if isinstance(default, ast.Constant):
            known[name] = default.value
    for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults, strict=False):
        if isinstance(d, ast.Constant):
            known[a.arg] = d.value
    for name, arg in zip(params, call.args, strict=False):
        if isinstance(arg, ast.Starred):
            break
        if isinstance(arg, ast.Constant):
            known[name] = arg.value
        else:
            known.pop(name, None)
    for k in call.keywords:
        if k.arg is None:
            return {}  # **kwargs: nothing is known
        if isinstance(k.value, ast.Constant):
            known[k.arg] = k.value.value
        else:
            known.pop(k.arg, None)
    return known


def _truth(test: ast.AST, known: dict[str, object]) -> bool | None:
    """The value of an ``if`` test from the known arguments, or None."""
    if isinstance(test, ast.Name) and test.id in known:
        return bool(known[test.id])
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _truth(test.operand, known)
        return None if inner is None else not inner
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) \
            and test.left.id in known and isinstance(test.comparators[0], ast.Constant):
        value, other = known[test.left.id], test.comparators[0].value
        if isinstance(test.ops[0], ast.Eq | ast.Is):
            return value == other
        if isinstance(test.ops[0], ast.NotEq | ast.IsNot):
            return value != other
    return None


def _live_nodes(fn: ast.AST, known: dict[str, object] | None) -> list[ast.AST]:
    """The nodes of ``fn``, without the branches the known arguments rule out."""
    if not known:
        return list(ast.walk(fn))
    out: list[ast.AST] = []
    stack: list[ast.AST] = [fn]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.If):
            value = _truth(node.test, known)
            if value is not None:
                out.append(node.test)
                stack.extend(node.body if value else node.orelse)
                continue
        stack.extend(ast.iter_child_nodes(node))
    return out


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
             tree: FileIndex | None = None, stmt: ast.stmt | None = None,
             project: Project | None = None, bound: Bound | None = None) -> Diagnosis | None:
    """The failing statement at ``line`` and, when the code decides it, its culprit.
    (``tree`` and ``stmt``: a scan over a whole file indexes it once; ``project``: the other
    files of the user's project, where imported classes and bases are read.)"""
    tree = tree or _index_of(src)
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
                     culprit=None, read=read, operand_nodes=ops, signature=_params(function))
    return _decide(diag, src, tree, stmt, function, cls, where, facts, project, ops, bound=bound)


def locate_line(src: SourceFile, line: int, shown: str) -> int:
    """The line of ``src`` that ran: the traceback's number when that line reads as the code the
    traceback printed, else the nearest line that does (the file here is another version of the
    one that ran: a line was added above, or ``--source`` points at a later checkout)."""
    want = " ".join((shown or "").split())
    if not want:
        return line
    def same(i: int) -> bool:
        have = " ".join(src.lines[i - 1].split()) if 0 < i <= len(src.lines) else ""
        # a traceback may print a long line cut short
        return bool(have) and (have == want or (len(want) >= 20 and have.startswith(want)))
    if same(line):
        return line
    hits = [i for i in range(1, len(src.lines) + 1) if same(i)]
    return min(hits, key=lambda i: (abs(i - line), i)) if hits else line


def _params(function: ast.AST | None) -> list[str]:
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return []
    a = function.args
    return [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def diagnose_caller(src: SourceFile, line: int, facts: dict, callee: Diagnosis, *, path: str = "",
                    project: Project | None = None, on_cpu: bool = False,
                    bound: Bound | None = None) -> Diagnosis | None:
    """The frame that called ``callee``'s function, when its operands were that function's
    parameters: the arguments this statement passed them are followed instead (a loss whose
    ``target`` is the batch's label the training loop never moved)."""
    if not callee.parameters or not callee.function:
        return None
    tree = _index_of(src)
    stmt = tree.statement_at(line)
    if stmt is None:
        return None
    header = _header(stmt)
    calls = [n for n in _walk(header) if isinstance(n, ast.Call)]
    by_name = [c for c in calls if _call_name(c) == callee.function]
    if not by_name and callee.function in ("forward", "__call__"):
        by_name = [c for c in calls if _is_module_call(src, c)]
    if not by_name:
        return None
    call = by_name[0]
    params = callee.signature
    if params[:1] in (["self"], ["cls"]):
        params = params[1:]
    ops: list[tuple[str, ast.AST]] = []
    for role, name in callee.parameters:
        arg = kwarg(call, name)
        if arg is None and name in params:
            i = params.index(name)
            if i < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:i + 1]):
                arg = call.args[i]
        if arg is not None and all(arg is not n for _, n in ops):
            ops.append((role, arg))
    if not ops:
        return None
    function = next((a for a in tree.ancestors(stmt) if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)), None)
    cls = next((a for a in tree.ancestors(stmt) if isinstance(a, ast.ClassDef)), None)
    where = path or src.path
    end = stmt.end_lineno or stmt.lineno
    fn_name = getattr(function, "name", "") if function is not None else ""
    text = " ".join(_src(src, h) for h in header) if header else _line(src, stmt.lineno)
    diag = Diagnosis(path=where, line=stmt.lineno, end_line=end, statement=text, function=fn_name,
                     cls=cls.name if cls is not None else "", operands=[_src(src, n) for _, n in ops],
                     culprit=None, read=[f"{where}:{stmt.lineno} (the call of `{callee.function}`)"],
                     operand_nodes=ops, signature=_params(function))
    return _decide(diag, src, tree, stmt, function, cls, where, facts, project, ops, on_cpu=on_cpu, bound=bound)


def _decide(diag: Diagnosis, src: SourceFile, tree: FileIndex, stmt: ast.stmt, function: ast.AST | None,
            cls: ast.ClassDef | None, where: str, facts: dict, project: Project | None,
            ops: list[tuple[str, ast.AST]], *, on_cpu: bool = False, bound: Bound | None = None) -> Diagnosis:
    """Follow each operand to its origin; the surest CPU origin is the culprit (``on_cpu``: a
    live program says these values are on the CPU, so a move written before did not run)."""
    wanted = _cpu_role(facts)
    found: list[tuple[tuple[int, int], Culprit]] = []
    for role, node in ops:
        tracer = _Tracer(src, tree, stmt, function, cls, where, facts, project)
        tracer.moves_skipped = on_cpu
        tracer.bound = bound
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
                if tracer.parameter:
                    diag.parameters.append((role, tracer.parameter))
                continue
            kind, made = hit
        family, why, fix = KINDS[kind]
        # an index (T6) or a generator (T8) is a device-bound argument whatever made it (F9)
        if (facts.get("template"), role) in (("T6", "index"), ("T6", "indexed"), ("T8", "generator")):
            family = "F9"
        expr = _src(src, node)
        if kind == "layer-created-after-move" or kind == "modules-in-plain-list":
            role = "weight"
        culprit = Culprit(expr=expr, role=role, made_at=tracer.where(made), kind=kind, family=family,
                          why=why, fix=_place(fix, _other(ops, node, src)), chain=tracer.chain)
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


def _other(ops: list[tuple[str, ast.AST]], node: ast.AST, src: SourceFile) -> str | None:
    """The operand whose device the culprit should take, as written; None when the statement
    has no other tensor (a collective: `dist.all_reduce(total, dist.ReduceOp.SUM)`)."""
    for _, n in ops:
        if n is not node and not _plainly_not_a_tensor(n):
            text = _src(src, n)
            if text and len(text) <= 40:
                return text
    return None


def _plainly_not_a_tensor(n: ast.AST) -> bool:
    """A literal, or a constant spelled in capitals (`dist.ReduceOp.SUM`, `MAX_LEN`)."""
    if isinstance(n, ast.Constant):
        return True
    name = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else ""
    return bool(name) and name.isupper()


# where the culprit should go when the statement has no other tensor to take the device of
_NO_OTHER = {
    "create it where the other operand lives: pass `device=<other>.device` to the factory "
    "(or use `torch.zeros_like(...)`-style factories)":
        "create it on the GPU this code runs on: pass `device=` to the factory (for a collective, "
        "the rank's own GPU: `torch.tensor(..., device=torch.cuda.current_device())`; a legacy "
        "constructor such as `torch.FloatTensor(...)` takes no CUDA device)",
    "`device=<other>.device`": "`device=` the GPU this code runs on (for a collective, the rank's "
                               "own: `device=torch.cuda.current_device()`)",
    "`.to(<other>.device)`": "`.to()` the GPU this code runs on (for a collective, the rank's own: "
                             "`.to(torch.cuda.current_device())`)",
}


def _place(fix: str, other: str | None) -> str:
    if other is not None:
        return fix.replace("<other>", other)
    for template, words in _NO_OTHER.items():
        fix = fix.replace(template, words)
    return fix.replace("<other>", "other")


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
