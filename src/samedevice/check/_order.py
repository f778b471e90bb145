"""Rules about the order of statements in one scope (SD101, SD301, SD701, SD801, SD902, SD1001).

A scope is the module body or one function body; its statements are followed in order, with
nested blocks read where they stand.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from samedevice.analysis.source import SourceFile, const_str, has_kwargs_splat, kwarg, root_name

Report = Callable[[str, ast.AST, str], None]
_DTYPE_WORDS = re.compile(r"(float|half|bfloat|double|int|long|bool|dtype|complex)", re.I)
_MAX_PATHS = 64


def scopes(src: SourceFile) -> Iterator[list[ast.stmt]]:
    yield src.tree.body
    for node in src.function_nodes:
        yield node.body


def flat(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements in source order, nested blocks included, functions and classes skipped."""
    for s in body:
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield s
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and not isinstance(s, ast.Lambda):
                yield from flat(inner)
        for h in getattr(s, "handlers", []) or []:
            yield from flat(h.body)


def _own_calls(s: ast.stmt) -> Iterator[ast.Call]:
    """Calls in the statement itself (not in its nested blocks)."""
    parts: list[ast.AST] = []
    if isinstance(s, ast.If | ast.While):
        parts = [s.test]
    elif isinstance(s, ast.For | ast.AsyncFor):
        parts = [s.iter]
    elif isinstance(s, ast.With | ast.AsyncWith):
        parts = [i.context_expr for i in s.items]
    elif isinstance(s, ast.Try):
        parts = []
    else:
        parts = [s]
    for p in parts:
        for n in ast.walk(p):
            if isinstance(n, ast.Call):
                yield n


def is_device_move(src: SourceFile, call: ast.Call) -> bool:
    """``x.to(device)`` / ``x.cuda()`` -- a move to a device, not a dtype cast."""
    if not isinstance(call.func, ast.Attribute):
        return False
    if call.func.attr == "cuda":
        return True
    if call.func.attr != "to":
        return False
    target = call.args[0] if call.args else kwarg(call, "device")
    if target is None:
        return False
    s = const_str(target)
    if s is not None:
        return not s.startswith("cpu")
    q = src.qual(target) or ""
    if q.startswith("torch.") and _DTYPE_WORDS.search(q.rsplit(".", 1)[-1]):
        return False
    if isinstance(target, ast.Attribute) and target.attr == "dtype":
        return False
    if isinstance(target, ast.Name) and _DTYPE_WORDS.search(target.id) and "device" not in target.id:
        return False
    return True


def _moved_name(src: SourceFile, s: ast.stmt) -> str | None:
    """The model name a statement moves: ``m.to(d)``, ``m = m.to(d)``, ``m = Net().to(d)``."""
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and is_device_move(src, s.value):
        return root_name(s.value.func.value)  # type: ignore[union-attr]
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        v = s.value
        while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute):
            if is_device_move(src, v):
                return s.targets[0].id
            if v.func.attr not in ("eval", "train", "requires_grad_", "half", "float"):
                break
            v = v.func.value
    return None


# -- SD101 ---------------------------------------------------------------------------------------


def check_attach_after_move(src: SourceFile, report: Report) -> None:
    if ".to(" not in src.text and ".cuda(" not in src.text:
        return
    for body in scopes(src):
        moved: set[str] = set()
        derived: dict[str, str] = {}  # local name -> the moved model it is part of
        pending: list[tuple[str, ast.AST]] = []

        def root(node: ast.AST, moved: set[str] = moved, derived: dict[str, str] = derived) -> str | None:
            r = root_name(node)
            if r in moved:
                return r
            return derived.get(r or "")

        for s in flat(body):
            m = _moved_name(src, s)
            if m:
                moved.add(m)
                pending = [p for p in pending if p[0] != m]
                continue
            if isinstance(s, ast.Assign) and len(s.targets) == 1:
                t, v = s.targets[0], s.value
                if isinstance(t, ast.Name):
                    r = None
                    if isinstance(v, ast.Attribute | ast.Subscript):
                        r = root(v)
                    elif isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "getattr" and v.args:
                        r = root(v.args[0])
                    if r and r != t.id:
                        derived[t.id] = r
                    else:
                        derived.pop(t.id, None)
                        moved.discard(t.id)
                elif isinstance(t, ast.Attribute) and isinstance(v, ast.Call) and src.is_stateful_ctor(v) \
                        and kwarg(v, "device") is None:
                    r = root(t)
                    if r:
                        pending.append((r, s))
            if isinstance(s, ast.For) and isinstance(s.target, ast.Name) and isinstance(s.iter, ast.Tuple | ast.List):
                roots = {root(e) for e in s.iter.elts}
                if len(roots) == 1 and None not in roots:
                    derived[s.target.id] = roots.pop()  # type: ignore[assignment]
            for call in _own_calls(s):
                if not isinstance(call.func, ast.Attribute) and not (
                        isinstance(call.func, ast.Name) and call.func.id == "setattr"):
                    continue
                if isinstance(call.func, ast.Name):
                    r = root(call.args[0]) if call.args else None
                elif call.func.attr in ("to", "cuda", "apply", "register_forward_hook"):
                    continue
                else:
                    r = root(call.func.value)
                if not r:
                    continue
                for a in [*call.args, *(k.value for k in call.keywords)]:
                    if isinstance(a, ast.Call) and src.is_stateful_ctor(a) and kwarg(a, "device") is None:
                        pending.append((r, a))
        for name, node in pending:
            report("SD101", node, f"`{name}`")


# -- SD301 ---------------------------------------------------------------------------------------


def _statements(src: SourceFile) -> Iterator[ast.stmt]:
    for body in scopes(src):
        yield from flat(body)


def _paths(body: list[ast.stmt]) -> list[list[ast.stmt]]:
    paths: list[list[ast.stmt]] = [[]]
    for s in body:
        if isinstance(s, ast.If):
            a, b = _paths(s.body), _paths(s.orelse)
            paths = [[*p, s, *x] for p in paths for x in (a + b)][:_MAX_PATHS]
        elif isinstance(s, ast.For | ast.While | ast.With | ast.AsyncWith | ast.AsyncFor):
            inner = _paths(s.body)
            paths = [[*p, s, *x] for p in paths for x in inner][:_MAX_PATHS]
        elif isinstance(s, ast.Try):
            inner = _paths(s.body)
            paths = [p + x for p in paths for x in inner][:_MAX_PATHS]
        elif isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        else:
            paths = [[*p, s] for p in paths]
    return paths


def _target_names(target: ast.AST) -> list[ast.Name]:
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for e in target.elts for n in _target_names(e)]
    return []


_NOT_MEETINGS = frozenset({"print", "len", "str", "isinstance", "enumerate", "zip", "list", "tuple",
                           "dict", "range", "int", "float", "getattr", "setattr", "hasattr", "type"})


def check_batch_moves(src: SourceFile, report: Report) -> None:
    reported: set[int] = set()
    if ".to(" not in src.text and ".cuda(" not in src.text:
        return
    for node in _statements(src):
        if not isinstance(node, ast.For | ast.AsyncFor):
            continue
        target = node.target
        if isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) \
                and node.iter.func.id == "enumerate" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target = target.elts[1]
        elif isinstance(node.iter, ast.Call) and (
                (isinstance(node.iter.func, ast.Name) and node.iter.func.id == "zip")
                or (isinstance(node.iter.func, ast.Attribute) and node.iter.func.attr == "items")):
            continue  # pairs of two collections (zip, dict.items()), not members of one batch
        names = {n.id for n in _target_names(target)}
        if len(names) < 2:
            continue
        for path in _paths(node.body):
            _follow_batch(src, path, names, report, reported)


def _follow_batch(src: SourceFile, path: list[ast.stmt], batch: set[str], report: Report,
                  reported: set[int]) -> None:
    moved: set[str] = set()
    touched: set[str] = set()  # batch names rebound some other way: no longer raw batch data
    derived: set[str] = set()
    for s in path:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            t = s.targets[0].id
            v = s.value
            if t in batch and isinstance(v, ast.Call) and is_device_move(src, v) and root_name(v.func) == t:
                moved.add(t)
                continue
            used = {n.id for n in ast.walk(v) if isinstance(n, ast.Name)}
            if t in batch:
                touched.add(t)
            if used & (moved | derived):
                derived.add(t)
        if not moved:
            continue
        for call in _own_calls(s):
            if isinstance(call.func, ast.Name):
                if call.func.id in _NOT_MEETINGS or call.func.id.startswith(("print", "log")):
                    continue
            elif isinstance(call.func, ast.Attribute):
                q = src.qual(call.func) or ""
                if not (q.startswith("torch.") or (isinstance(call.func.value, ast.Name) and call.func.value.id == "self")):
                    continue
            else:
                continue
            call_args = [*call.args, *(k.value for k in call.keywords)]
            here = moved | derived
            on_device = [a for a in call_args if (isinstance(a, ast.Name) and a.id in here)
                         or (isinstance(a, ast.Call) and any(isinstance(n, ast.Name) and n.id in here
                                                            for n in ast.walk(a)))]
            raw = [a for a in call_args if isinstance(a, ast.Name) and a.id in batch
                   and a.id not in moved | touched]
            if on_device and raw:
                for a in raw:
                    if id(a) not in reported:
                        reported.add(id(a))
                        report("SD301", a, f"`{a.id}`")


# -- SD701 ---------------------------------------------------------------------------------------


def _model_of_optimizer(src: SourceFile, v: ast.AST, targets: list[str]) -> str | None:
    if not isinstance(v, ast.Call):
        return None
    q = src.qual(v.func) or ""
    is_optim = q.startswith("torch.optim.") and "lr_scheduler" not in q
    if not is_optim and not any("optim" in t for t in targets):
        return None
    for n in ast.walk(v):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and n.func.attr in ("parameters", "named_parameters") and isinstance(n.func.value, ast.Name):
            return n.func.value.id
    if not is_optim:
        for a in v.args:
            if isinstance(a, ast.Name):
                return a.id
    return None


def check_optimizer_order(src: SourceFile, report: Report) -> None:
    if "load_state_dict" not in src.text:
        return
    for body in scopes(src):
        optimizers: dict[str, str] = {}
        moved: set[str] = set()
        pending: list[tuple[str, ast.AST]] = []
        for s in flat(body):
            m = _moved_name(src, s)
            if m:
                for model, node in pending:
                    if model == m:
                        report("SD701", node, f"`{m}`")
                pending = [p for p in pending if p[0] != m]
                moved.add(m)
            if isinstance(s, ast.Assign) and len(s.targets) == 1:
                t = s.targets[0]
                names = [n.id for n in _target_names(t)]
                model = _model_of_optimizer(src, s.value, names)
                if model:
                    for n in names:
                        if "sched" not in n:
                            optimizers[n] = model
                elif isinstance(t, ast.Name) and not m:
                    moved.discard(t.id)
            for call in _own_calls(s):
                if isinstance(call.func, ast.Attribute) and call.func.attr == "load_state_dict" \
                        and isinstance(call.func.value, ast.Name) and call.func.value.id in optimizers:
                    model = optimizers[call.func.value.id]
                    if model not in moved:
                        pending.append((model, call))


# -- SD801 ---------------------------------------------------------------------------------------


def _device_index(src: SourceFile, node: ast.AST, consts: dict[str, int]) -> int | None:
    s = const_str(node)
    if s is not None:
        m = re.fullmatch(r"cuda:(\d+)", s)
        return int(m.group(1)) if m else (0 if s == "cuda" else None)
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.Call) and (src.qual(node.func) or "").endswith("torch.device") and node.args:
        if len(node.args) == 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, int):
            return node.args[1].value if const_str(node.args[0]) == "cuda" else None
        return _device_index(src, node.args[0], consts)
    return None


def check_dataparallel(src: SourceFile, report: Report) -> None:
    if "DataParallel" not in src.text:
        return
    for body in scopes(src):
        consts: dict[str, int] = {}
        model_index: dict[str, int] = {}
        for s in flat(body):
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                t = s.targets[0].id
                idx = _device_index(src, s.value, consts)
                if idx is not None:
                    consts[t] = idx
            m = _moved_name(src, s)
            if m:
                call = s.value if isinstance(s, ast.Expr | ast.Assign) else None
                while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr not in ("to", "cuda"):
                    call = call.func.value
                if isinstance(call, ast.Call):
                    dev = (call.args[0] if call.args else kwarg(call, "device"))
                    idx = _device_index(src, dev, consts) if dev is not None else 0
                    if idx is not None:
                        model_index[m] = idx
            for call in _own_calls(s):
                q = src.qual(call.func) or ""
                if not q.endswith("DataParallel") or "Distributed" in q:
                    continue
                if len(call.args) >= 2 or kwarg(call, "device_ids") is not None or has_kwargs_splat(call):
                    continue
                first = call.args[0] if call.args else kwarg(call, "module")
                if isinstance(first, ast.Name) and model_index.get(first.id, 0) != 0:
                    report("SD801", call, f"`{first.id}` is on `cuda:{model_index[first.id]}`")


# -- SD902 ---------------------------------------------------------------------------------------

SAMPLERS = frozenset({"randn", "rand", "randint", "randperm", "normal", "bernoulli", "multinomial",
                      "poisson", "rand_like", "randn_like", "randint_like"})


def _is_cpu_generator(src: SourceFile, v: ast.AST) -> bool:
    while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in ("manual_seed", "seed"):
        v = v.func.value
    if not isinstance(v, ast.Call) or not (src.qual(v.func) or "").endswith("torch.Generator"):
        return False
    d = v.args[0] if v.args else kwarg(v, "device")
    return d is None or (const_str(d) or "").startswith("cpu")


def _callee(src: SourceFile, call: ast.Call, instances: dict[str, str], cls: str | None) -> ast.FunctionDef | None:
    f = call.func
    if isinstance(f, ast.Name):
        if f.id in src.functions:
            return src.functions[f.id]
        if f.id in instances:
            return src.classes[instances[f.id]].methods.get("__call__")
        if f.id in src.classes:
            return src.classes[f.id].methods.get("__init__")
    elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        owner = cls if f.value.id == "self" else instances.get(f.value.id)
        if owner and owner in src.classes:
            return src.classes[owner].methods.get(f.attr)
    return None


def _is_cpu_device(src: SourceFile, node: ast.AST) -> bool:
    if (const_str(node) or "").startswith("cpu"):
        return True
    return (isinstance(node, ast.Call) and (src.qual(node.func) or "").endswith("torch.device")
            and bool(node.args) and (const_str(node.args[0]) or "").startswith("cpu"))


def check_generators(src: SourceFile, report: Report) -> None:
    if "Generator" not in src.text:
        return
    owner: dict[ast.AST, str] = {}
    for name, info in src.classes.items():
        for m in info.methods.values():
            owner[m] = name
    instances: dict[str, str] = {}
    for s in src.tree.body:
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name) \
                and s.value.func.id in src.classes:
            instances.update({t.id: s.value.func.id for t in s.targets if isinstance(t, ast.Name)})
    gens: dict[ast.AST, set[str]] = {}  # scope node -> names holding a CPU generator
    scope_nodes: list[ast.AST] = [src.tree, *src.function_nodes]
    for sc in scope_nodes:
        body = sc.body  # type: ignore[attr-defined]
        names = {t.id for s in flat(body) if isinstance(s, ast.Assign) and _is_cpu_generator(src, s.value)
                 for t in s.targets if isinstance(t, ast.Name)}
        if names:
            gens[sc] = names
    work = list(gens)
    while work:
        sc = work.pop()
        for s in flat(sc.body):  # type: ignore[attr-defined]
            for call in _own_calls(s):
                fn = _callee(src, call, instances, owner.get(sc))
                if fn is None:
                    continue
                params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
                if params and params[0] in ("self", "cls"):
                    params = params[1:]
                hit = {params[i] for i, a in enumerate(call.args)
                       if i < len(params) and isinstance(a, ast.Name) and a.id in gens[sc]}
                hit |= {k.arg for k in call.keywords if k.arg and isinstance(k.value, ast.Name)
                        and k.value.id in gens[sc]}
                new = hit - gens.get(fn, set())
                if new:
                    gens[fn] = gens.get(fn, set()) | new
                    work.append(fn)
    for sc, names in gens.items():
        body = sc.body  # type: ignore[attr-defined]
        maybe_cpu = {t.id for s in flat(body) if isinstance(s, ast.Assign) and _is_cpu_device(src, s.value)
                     for t in s.targets if isinstance(t, ast.Name)}
        for s in flat(body):
            for call in _own_calls(s):
                q = src.qual(call.func) or ""
                if not (q.startswith("torch.") and q.rsplit(".", 1)[-1] in SAMPLERS):
                    continue
                g, d = kwarg(call, "generator"), kwarg(call, "device")
                if not isinstance(g, ast.Name) or g.id not in names or d is None:
                    continue
                if (const_str(d) or "").startswith("cpu") or (isinstance(d, ast.Name) and d.id in maybe_cpu):
                    continue
                if isinstance(d, ast.Attribute) and d.attr == "device" and root_name(d) == g.id:
                    continue
                report("SD902", call, f"`{g.id}`")


# -- SD1001 --------------------------------------------------------------------------------------


def _literals(node: ast.AST) -> tuple[str, ...]:
    return tuple(sorted(n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)))


def check_load_map_location(src: SourceFile, report: Report) -> None:
    if "torch.load" not in src.text and "map_location" not in src.text:
        return
    wrappers = set()
    for name, fn in src.functions.items():
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
        if "map_location" not in params:
            continue
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and (src.qual(n.func) or "") == "torch.load":
                ml = kwarg(n, "map_location")
                if isinstance(ml, ast.Name) and ml.id == "map_location":
                    wrappers.add(name)
    saved: list[ast.AST] = []
    for n in ast.walk(src.tree) if "save(" in src.text else ():
        if isinstance(n, ast.Call) and (src.qual(n.func) or "") == "torch.save" and len(n.args) >= 2:
            saved.append(n.args[1])
    saved_literals = {_literals(p) for p in saved if _literals(p)}
    saved_names = {p.id for p in saved if isinstance(p, ast.Name)}
    for fn in src.function_nodes:
        if fn.name in wrappers or not _names_device(src.nodes(fn)):
            continue
        for n in src.nodes(fn):
            if not isinstance(n, ast.Call) or kwarg(n, "map_location") is not None or has_kwargs_splat(n):
                continue
            q = src.qual(n.func) or ""
            if q == "torch.load" and n.args:
                path = n.args[0]
                if (isinstance(path, ast.Name) and path.id in saved_names) or _literals(path) in saved_literals:
                    continue
                report("SD1001", n, "`torch.load`")
            elif isinstance(n.func, ast.Name) and n.func.id in wrappers:
                report("SD1001", n, f"`{n.func.id}` (it passes `map_location=None` to `torch.load`)")


def _names_device(nodes: list[ast.AST]) -> bool:
    for n in nodes:
        if isinstance(n, ast.Name) and n.id == "device":
            return True
        if isinstance(n, ast.Attribute) and n.attr == "device" and isinstance(n.value, ast.Name) and n.value.id == "self":
            return True
    return False


# -- SD303 ---------------------------------------------------------------------------------------


def _fixed_accelerator(src: SourceFile, fn: ast.FunctionDef) -> ast.Call | None:
    """A call in ``fn`` that sends a tensor (not the module) to a literal accelerator:
    ``image.to("cuda")``, ``x.to(DEVICE)`` with ``DEVICE = "cuda"``, ``batch.cuda()``."""
    consts = {t.id for s in flat(fn.body) if isinstance(s, ast.Assign)
              and (const_str(s.value) or "").startswith(("cuda", "mps", "xpu"))
              for t in s.targets if isinstance(t, ast.Name)}
    for node in src.nodes(fn):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if root_name(node.func.value) in ("self", None):
            continue
        if node.func.attr == "cuda":
            return node
        if node.func.attr == "to" and node.args:
            a = node.args[0]
            if (const_str(a) or "").startswith(("cuda", "mps", "xpu")) or (isinstance(a, ast.Name) and a.id in consts):
                return node
    return None


def check_model_never_moved(src: SourceFile, report: Report) -> None:
    if ".to(" not in src.text and ".cuda(" not in src.text:
        return
    moving: dict[str, set[str]] = {}  # class -> methods that send their tensors to an accelerator
    for name in src.module_classes:
        info = src.classes[name]
        found = {m for m, fn in info.methods.items() if _fixed_accelerator(src, fn) is not None}
        changed = True
        while changed:  # a method calling self.<moving method> moves too
            changed = False
            for m, fn in info.methods.items():
                if m in found:
                    continue
                if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in found
                       and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
                       for n in src.nodes(fn)):
                    found.add(m)
                    changed = True
        if found:
            moving[name] = found
    if not moving:
        return
    instances: dict[str, str] = {}
    moved: set[str] = set()
    for s in flat(src.tree.body):
        m = _moved_name(src, s)
        if m:
            moved.add(m)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and not m:
            v = s.value
            while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in ("eval", "train"):
                v = v.func.value
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in moving:
                instances[s.targets[0].id] = v.func.id
        for call in _own_calls(s):
            f = call.func
            if isinstance(f, ast.Name) and f.id in instances:
                obj, method = f.id, "forward"
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in instances:
                obj, method = f.value.id, f.attr
            else:
                continue
            if obj in moved or (isinstance(call, ast.Call) and any(
                    isinstance(a, ast.Name) and a.id == obj for a in call.args)):
                continue
            if method in moving[instances[obj]]:
                report("SD303", call, f"`{obj}` (`{instances[obj]}.{method}` sends its input to a fixed device)")
