"""One parsed file: import aliases, qualified names, and what its classes are.

Every rule reads the file through this object, so names are resolved once: ``nn.Linear``,
``torch.nn.Linear`` and ``from torch.nn import Linear`` all come out as ``torch.nn.Linear``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

# torch.nn classes whose instances hold no parameters or buffers: attaching one after a move
# is harmless, so the rules about new modules ignore them.
STATELESS_NN = frozenset({
    "Identity", "ReLU", "ReLU6", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softmax",
    "LogSoftmax", "Softplus", "Softsign", "ELU", "SELU", "CELU", "LeakyReLU", "Hardswish",
    "Hardsigmoid", "Hardtanh", "Tanhshrink", "Threshold", "GLU", "Dropout", "Dropout1d",
    "Dropout2d", "Dropout3d", "AlphaDropout", "Flatten", "Unflatten", "MaxPool1d", "MaxPool2d",
    "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle",
    "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
    "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "ChannelShuffle", "Softmax2d",
    "LocalResponseNorm", "CrossEntropyLoss", "MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss",
    "NLLLoss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "CosineSimilarity", "PairwiseDistance",
    "Fold", "Unfold", "Sequential", "ModuleList", "ModuleDict",
})
MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")


def const_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def kwarg(call: ast.Call, name: str) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def has_kwargs_splat(call: ast.Call) -> bool:
    return any(k.arg is None for k in call.keywords)


def root_name(node: ast.AST) -> str | None:
    """``model.a.b`` -> ``model``; ``self.x[0]`` -> ``self``."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def self_attr(node: ast.AST) -> str | None:
    """``self.name`` -> ``name`` (the first attribute below ``self``), else None."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


@dataclass
class ClassInfo:
    node: ast.ClassDef
    bases: list[str]  # qualified base names
    methods: dict[str, ast.FunctionDef] = field(default_factory=dict)


class SourceFile:
    def __init__(self, tree: ast.Module, path: str, text: str, local: Path | None = None) -> None:
        self.tree = tree
        self.path = path
        self.text = text
        # the file on this disk, when it is one: imports of the project resolve from it
        self.local = local
        self.lines = text.splitlines()
        self.aliases: dict[str, str] = {}
        # name -> (module, level) of each ``from module import name``: level 0 is absolute,
        # 1 is ``from .module``, 2 ``from ..module``
        self.imported_from: dict[str, tuple[str, int]] = {}
        self.classes: dict[str, ClassInfo] = {}
        self._index()
        self.functions: dict[str, ast.FunctionDef] = {}
        for node in tree.body:
            self._imports(node)
        for node in self._import_nodes:
            if node not in tree.body:
                self._imports(node)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self._add_class(node)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[node.name] = node  # type: ignore[assignment]
        for node in self._classes:  # nested classes (tests define modules inside functions)
            if node.name not in self.classes:
                self._add_class(node)

    def nodes(self, node: ast.AST) -> list[ast.AST]:
        """``ast.walk(node)`` as a list, computed once per node (the rules walk the same
        functions many times; this is most of the checker's speed)."""
        found = self._walked.get(id(node))
        if found is None:
            found = self._walked[id(node)] = list(ast.walk(node))
        return found

    def _index(self) -> None:
        """One pass over the *statements* (not the expressions, which are most of a tree):
        imports, classes and functions wherever they are."""
        self._walked: dict[int, list[ast.AST]] = {}
        self._functions: list[ast.FunctionDef] = []
        self._classes: list[ast.ClassDef] = []
        self._import_nodes: list[ast.stmt] = []
        stack: list[ast.stmt] = list(reversed(self.tree.body))
        while stack:
            st = stack.pop()
            if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef):
                self._functions.append(st)  # type: ignore[arg-type]
            elif isinstance(st, ast.ClassDef):
                self._classes.append(st)
            elif isinstance(st, ast.Import | ast.ImportFrom):
                self._import_nodes.append(st)
            inner: list[ast.stmt] = []
            for name in ("body", "orelse", "finalbody"):
                block = getattr(st, name, None)
                if isinstance(block, list):
                    inner += block
            for h in getattr(st, "handlers", None) or []:
                inner += h.body
            for case in getattr(st, "cases", None) or []:
                inner += case.body
            stack.extend(reversed(inner))

    @cached_property
    def function_nodes(self) -> list[ast.FunctionDef]:
        return self._functions

    def _add_class(self, node: ast.ClassDef) -> None:
        info = ClassInfo(node, [self.qual(b) or "" for b in node.bases])
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                info.methods[item.name] = item  # type: ignore[assignment]
        self.classes[node.name] = info

    def _imports(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    self.aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    self.aliases[top] = top
            return
        if not isinstance(node, ast.ImportFrom):
            return
        for a in node.names:
            name = a.asname or a.name
            self.imported_from.setdefault(name, (".".join(filter(None, (node.module, a.name))), node.level))
            if not node.level:
                if node.module:
                    self.aliases[name] = f"{node.module}.{a.name}"
            else:
                # relative imports inside the torch package itself (torch/nn/modules/*.py)
                self.aliases.setdefault(name, f".{node.module or ''}.{a.name}")

    def qual(self, node: ast.AST) -> str | None:
        """Dotted name with import aliases resolved, or None for anything else."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.aliases.get(node.id, node.id)
        return ".".join([head, *reversed(parts)])

    # -- classes ------------------------------------------------------------------------------

    def _base_chain(self, name: str, seen: set[str] | None = None) -> list[str]:
        """Qualified names of every base, following classes defined in this file."""
        seen = seen if seen is not None else set()
        if name in seen or name not in self.classes:
            return []
        seen.add(name)
        out = []
        for b in self.classes[name].bases:
            out.append(b)
            out += self._base_chain(b, seen)
        return out

    @cached_property
    def module_classes(self) -> set[str]:
        """Classes of this file that are ``nn.Module`` subclasses (directly or through bases)."""
        result = set()
        for name in self.classes:
            for b in self._base_chain(name):
                tail = b.rsplit(".", 1)[-1]
                if (b in MODULE_BASES or (b.startswith("torch.nn.") and tail[:1].isupper())
                        or tail in ("Module", "LightningModule") or b.endswith(".modules.module.Module")
                        or (b.startswith(".") and tail == "Module")):
                    result.add(name)
                    break
        return result

    def overrides_apply(self, name: str) -> bool:
        """The class or a base defined in this file moves its own state (``_apply``/``to``)."""
        for cls in [name, *self._base_chain(name)]:
            info = self.classes.get(cls)
            if info and any(m in info.methods for m in ("_apply", "to", "cuda")):
                return True
        return False

    @cached_property
    def stateful_classes(self) -> set[str]:
        """Module classes of this file that hold parameters or buffers of their own."""
        result: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name in self.module_classes - result:
                if self._class_has_state(name, result):
                    result.add(name)
                    changed = True
        return result

    def _class_has_state(self, name: str, known: set[str]) -> bool:
        for b in self._base_chain(name):
            tail = b.rsplit(".", 1)[-1]
            if b.startswith("torch.nn.") and tail[:1].isupper() and tail not in STATELESS_NN and tail != "Module":
                return True
            if tail in known:
                return True
        for cls in [name, *self._base_chain(name)]:
            info = self.classes.get(cls)
            if not info:
                continue
            for node in self.nodes(info.node):
                if isinstance(node, ast.Call):
                    q = self.qual(node.func) or ""
                    if q.endswith(("register_buffer", "register_parameter", "add_state", "nn.Parameter")):
                        return True
                    if self.is_stateful_ctor(node, known):
                        return True
        return False

    def is_stateful_ctor(self, call: ast.Call, known: set[str] | None = None) -> bool:
        """A call that builds a module with parameters or buffers (``nn.Linear(...)``)."""
        q = self.qual(call.func)
        if not q:
            return False
        tail = q.rsplit(".", 1)[-1]
        if q.startswith("torch.nn.") and tail[:1].isupper():
            if tail in ("Sequential", "ModuleList", "ModuleDict"):
                return any(isinstance(a, ast.Call) and self.is_stateful_ctor(a, known)
                           for a in self.nodes(call) if a is not call)
            return tail not in STATELESS_NN and tail != "Module"
        known = self.stateful_classes if known is None else known
        return q in known
