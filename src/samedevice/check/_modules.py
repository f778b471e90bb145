"""Rules about what a class keeps and when it builds it (SD201, SD202, SD601, SD702)."""

from __future__ import annotations

import ast
from collections.abc import Callable

from samedevice.analysis.source import SourceFile, const_str, self_attr
from samedevice.analysis.values import FACTORIES

Report = Callable[[str, ast.AST, str], None]
SKIP_METHODS = frozenset({"__init__", "_apply", "to", "cuda", "cpu", "extra_repr", "__repr__",
                          "state_dict", "load_state_dict", "_load_from_state_dict",
                          "_save_to_state_dict", "__getstate__", "__setstate__"})


def _is_factory(src: SourceFile, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    q = src.qual(node.func) or ""
    tail = q.rsplit(".", 1)[-1]
    if not (q.startswith("torch.") and q.count(".") == 1 and tail in FACTORIES):
        return False
    if any(k.arg == "device" or k.arg is None for k in node.keywords):
        return False
    if tail in ("tensor", "as_tensor"):  # a list, not a scalar: 0-dim tensors meet any device
        return bool(node.args) and isinstance(node.args[0], ast.List | ast.Tuple | ast.ListComp)
    return True


def _tensor_value(src: SourceFile, value: ast.AST, locals_: dict[str, bool]) -> bool:
    """A CPU tensor, or a list / dict of them, made right here (or in a local of ``__init__``)."""
    if isinstance(value, ast.Name):
        return locals_.get(value.id, False)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        return _tensor_value(src, value.left, locals_) or _tensor_value(src, value.right, locals_)
    if isinstance(value, ast.List | ast.Tuple):
        return bool(value.elts) and all(_tensor_value(src, e, locals_) for e in value.elts)
    if isinstance(value, ast.Dict):
        return bool(value.values) and all(_tensor_value(src, v, locals_) for v in value.values)
    if isinstance(value, ast.ListComp):
        return _tensor_value(src, value.elt, locals_)
    if _is_factory(src, value):
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        # torch.zeros(3).float(), torch.tensor([...]).view(...)
        if value.func.attr in ("float", "long", "view", "reshape", "double", "half", "int",
                               "unsqueeze", "clone", "detach", "t"):
            return _tensor_value(src, value.func.value, locals_)
        return False
    return _is_factory(src, value)


def _modules_value(src: SourceFile, value: ast.AST) -> bool:
    """A plain list / dict of modules with state."""
    if isinstance(value, ast.List | ast.Tuple):
        items = value.elts
    elif isinstance(value, ast.Dict):
        items = value.values
    elif isinstance(value, ast.ListComp):
        items = [value.elt]
    else:
        return False
    return bool(items) and all(isinstance(i, ast.Call) and src.is_stateful_ctor(i) for i in items)


def _reads(cls: ast.ClassDef, attr: str) -> ast.AST | None:
    """The first read of ``self.<attr>`` in a method other than ``__init__`` and the movers."""
    for item in cls.body:
        if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) or item.name in SKIP_METHODS:
            continue
        for node in ast.walk(item):
            if (isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Name) and node.value.id == "self"):
                return node
    return None


def _device_aware(cls: ast.ClassDef, attr: str) -> bool:
    """The class checks or follows the attribute's device itself (``self.x.device``, ``.to``),
    or replaces the whole attribute in another method (it manages the value itself)."""
    for item in cls.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name != "__init__":
            for node in ast.walk(item):
                if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                           and t.value.id == "self" for t in targets):
                        return True
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and node.attr in ("device", "to", "cuda"):
            # down the chain to its root: self.x["k"].unsqueeze(0).expand(n, -1).to(device)
            inner = node.value
            while True:
                if isinstance(inner, ast.Subscript):
                    inner = inner.value
                elif isinstance(inner, ast.Call):
                    inner = inner.func
                elif isinstance(inner, ast.Attribute) and not (
                        isinstance(inner.value, ast.Name) and inner.value.id == "self"):
                    inner = inner.value
                else:
                    break
            if isinstance(inner, ast.Attribute) and inner.attr == attr and isinstance(inner.value, ast.Name) \
                    and inner.value.id == "self":
                return True
    return False


def _applied_elsewhere(src: SourceFile) -> set[str]:
    """Attributes that some ``_apply`` override in the file reassigns (YOLOv5's fix)."""
    names: set[str] = set()
    for info in src.classes.values():
        fn = info.methods.get("_apply")
        if fn is None:
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Attribute):
                        names.add(t.attr)
    return names


class _InitWalker:
    """Follows ``__init__`` in order: which names are registered on the current path."""

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        self.locals: dict[str, bool] = {}
        self.tensors: list[tuple[str, ast.AST]] = []
        self.modules: list[tuple[str, ast.AST]] = []
        self.empty: dict[str, ast.AST] = {}  # self.<name> = [] / {} not yet filled

    def run(self, body: list[ast.stmt], registered: set[str]) -> set[str]:
        for s in body:
            registered = self.stmt(s, registered)
        return registered

    def stmt(self, s: ast.stmt, registered: set[str]) -> set[str]:
        src = self.src
        if isinstance(s, ast.If):
            a = self.run(s.body, set(registered))
            b = self.run(s.orelse, set(registered))
            return a | b
        if isinstance(s, ast.For | ast.While | ast.With | ast.Try):
            inner = list(getattr(s, "body", []))
            return self.run(inner, registered)
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            f = s.value.func
            if (isinstance(f, ast.Attribute) and f.attr in ("append", "insert") and s.value.args
                    and isinstance(s.value.args[-1], ast.Call) and src.is_stateful_ctor(s.value.args[-1])):
                attr = self_attr(f.value)
                if attr in self.empty and attr not in registered:
                    self.modules.append((attr, self.empty.pop(attr)))  # self.blocks.append(Block())
                return registered
            q = src.qual(s.value.func) or ""
            if q.endswith(("register_buffer", "register_parameter", "add_module", "register_module")) \
                    and s.value.args:
                name = const_str(s.value.args[0])
                if name:
                    registered.add(name)
            return registered
        if isinstance(s, ast.Assign | ast.AnnAssign) and s.value is not None:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    self.locals[t.id] = _tensor_value(src, s.value, self.locals)
                elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    # a later assignment replaces the earlier value: `self.layers = []`, appends,
                    # then `self.layers = nn.ModuleList(self.layers)` (transformers LeViT)
                    self.tensors = [c for c in self.tensors if c[0] != t.attr]
                    self.modules = [c for c in self.modules if c[0] != t.attr]
                    self.empty.pop(t.attr, None)
                    if t.attr in registered:
                        continue
                    if isinstance(s.value, ast.Call) and (src.qual(s.value.func) or "").endswith("Parameter"):
                        registered.add(t.attr)
                    elif _tensor_value(src, s.value, self.locals):
                        self.tensors.append((t.attr, t))
                    elif _modules_value(src, s.value):
                        self.modules.append((t.attr, t))
                    elif isinstance(s.value, ast.List | ast.Dict) and not getattr(
                            s.value, "elts", getattr(s.value, "keys", None)):
                        self.empty[t.attr] = t  # filled below, perhaps with modules
        return registered


def check_classes(src: SourceFile, report: Report) -> None:
    applied = _applied_elsewhere(src)
    for name in src.module_classes:
        info = src.classes[name]
        if src.overrides_apply(name):
            continue
        init = info.methods.get("__init__")
        if init is not None:
            walker = _InitWalker(src)
            walker.run(init.body, set())
            for attr, node in walker.tensors:
                if attr not in applied and _reads(info.node, attr) is not None \
                        and not _device_aware(info.node, attr):
                    report("SD201", node, f"`self.{attr}`")
            for attr, node in walker.modules:
                if attr not in applied and _reads(info.node, attr) is not None:
                    report("SD202", node, f"`self.{attr}`")
        for mname, fn in info.methods.items():
            if not mname.startswith("on_"):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                        and src.is_stateful_ctor(node.value) \
                        and not any(k.arg == "device" for k in node.value.keywords):
                    for t in node.targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                            report("SD601", node, f"`self.{t.attr}` in `{mname}`")
    _helper_state(src, report)


def _helper_state(src: SourceFile, report: Report) -> None:
    """SD702: a non-module helper with its own ``to()`` whose ``load_state_dict`` keeps the
    loaded tensors where they are; loaded after the instance was moved, never moved again."""
    helpers = set()
    for name, info in src.classes.items():
        if name in src.module_classes:
            continue
        to, load = info.methods.get("to"), info.methods.get("load_state_dict")
        if to is None or load is None:
            continue
        moves = any(isinstance(n, ast.Attribute) and n.attr in ("to", "cuda") for n in ast.walk(load))
        assigns = any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) for t in n.targets)
                      for n in ast.walk(load))
        if assigns and not moves:
            helpers.add(name)
    if not helpers:
        return
    instances: set[str] = set()
    moved: set[str] = set()
    for s in src.tree.body:
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call):
            q = src.qual(s.value.func) or ""
            if q.split(".")[0] in helpers:
                instances |= {t.id for t in s.targets if isinstance(t, ast.Name)}
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute) \
                and s.value.func.attr in ("to", "cuda") and isinstance(s.value.func.value, ast.Name):
            moved.add(s.value.func.value.id)
    targets = instances & moved
    for fn in src.function_nodes:
        _loads_without_move(fn.body, targets, report)


def _loads_without_move(body: list[ast.stmt], targets: set[str], report: Report) -> None:
    pending: list[tuple[str, ast.AST]] = []
    for s in body:
        for node in ast.walk(s):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in targets:
                if node.func.attr == "load_state_dict":
                    pending.append((node.func.value.id, node))
                elif node.func.attr in ("to", "cuda"):
                    pending = [p for p in pending if p[0] != node.func.value.id]
    for name, node in pending:
        report("SD702", node, f"`{name}`")
