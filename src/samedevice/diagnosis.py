"""The diagnosis printed after a device error in a live program (``samedevice run``, the pytest
plugin): each operand of the failing statement by its source name and its device, read from
the failing frame, and the culprit with where it was made, why and the fix.

The message is read by explain's engine (template, op, argument, devices); the statement and
the origins by :mod:`samedevice.analysis.culprit` -- the same analysis ``explain`` runs on a
paste's files. Only the live values are new here: operands are looked up in the frame as names
and attribute chains (``self._center.value``), never evaluated as code, and a module operand
reports where its parameters are. Nothing here imports torch: a value's device is its
``.device``.
"""

from __future__ import annotations

import ast
import inspect
import json
import linecache
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from samedevice.analysis.culprit import (
    CALL_MUST_MOVE,
    KINDS,
    Culprit,
    Diagnosis,
    binding_of,
    call_name,
    diagnose,
    diagnose_caller,
    function_at,
    origin_at,
    origin_on_cpu,
)
from samedevice.analysis.project import Project
from samedevice.analysis.reading import library_path
from samedevice.analysis.source import SourceFile, kwarg
from samedevice.analysis.values import SIZE_FACTORIES

# torch's containers: indexing them is a lookup, never the user's code
_CONTAINERS = frozenset({"ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict"})
_INTERNAL = ("/torch/", "/samedevice/", "<frozen", "/site-packages/torch", "/_pytest/", "/pluggy/")


def _user_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    frames = []
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if not any(part in name for part in _INTERNAL):
            frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _facts(exc: BaseException) -> dict | None:
    from samedevice.explain.cache import knowledge
    from samedevice.explain.engine import explain_text

    text = f"{type(exc).__name__}: {exc}"
    kb = knowledge()
    result = explain_text(text[:20000], kb)
    if result["template"] is None:
        return None
    result["_kb"] = kb
    return result


def _lookup(expr: ast.AST, frame: FrameType) -> tuple[bool, Any]:
    """The value of a name or an attribute/constant-subscript chain in the frame."""
    if isinstance(expr, ast.Name):
        for scope in (frame.f_locals, frame.f_globals):
            if expr.id in scope:
                return True, scope[expr.id]
        return False, None
    if isinstance(expr, ast.Attribute):
        ok, base = _lookup(expr.value, frame)
        if not ok:
            return False, None
        try:
            return True, getattr(base, expr.attr)
        except Exception:  # a property that raises: unknown, not an error of ours
            return False, None
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant | ast.Name):
        ok, base = _lookup(expr.value, frame)
        if not ok:
            return False, None
        if isinstance(expr.slice, ast.Constant):
            key = expr.slice.value
        else:  # self.blocks[i]: a variable index, into a container whose indexing runs no user code
            if not (isinstance(base, list | tuple | dict) or type(base).__name__ in _CONTAINERS):
                return False, None
            found, key = _lookup(expr.slice, frame)
            if not found or not isinstance(key, int | str):
                return False, None
        try:
            return True, base[key]
        except Exception:
            return False, None
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _VIEWS:
        # q_positions.unsqueeze(-1): on its receiver's device, made where the receiver was; the
        # receiver stands for it (the call itself is never run)
        ok, base = _lookup(expr.func.value, frame)
        return (True, base) if ok and _is_tensor(base) else (False, None)
    if isinstance(expr, ast.Subscript):
        ok, base = _lookup(expr.value, frame)  # mask[:n, :n]: the same, for a tensor sliced
        return (True, base) if ok and _is_tensor(base) else (False, None)
    return False, None


# tensor methods whose result is on the receiver's device
_VIEWS = frozenset({"unsqueeze", "squeeze", "view", "view_as", "reshape", "reshape_as", "t", "transpose",
                    "permute", "contiguous", "float", "double", "half", "bfloat16", "long", "int", "bool",
                    "detach", "clone", "expand", "expand_as", "flatten", "unflatten", "narrow"})


def _is_tensor(value: Any) -> bool:
    return type(value).__name__ in ("Tensor", "Parameter") and hasattr(value, "is_cpu")


def _device(value: Any) -> str:
    if isinstance(value, list | tuple) and value and len(value) <= 8:
        # an LSTM's (h, c), a list of states: where its tensors are
        devices = sorted({_device(v) for v in value})
        return devices[0] if len(devices) == 1 else ""
    params = getattr(value, "parameters", None)
    dev = getattr(value, "device", None) if not callable(params) else None
    # a module's own ``self.device = device`` is what it was told, not where its weights are
    if dev is not None and not callable(dev):
        return str(dev)
    buffers = getattr(value, "buffers", None)
    if callable(params):  # a module: where its parameters and buffers are (a loss has only buffers)
        try:
            devices = sorted({str(p.device) for p in params()} | ({str(b.device) for b in buffers()} if callable(buffers) else set()))
        except Exception:
            return ""
        return ", ".join(devices) if devices else "no parameters"
    return ""


def describe(exc: BaseException, *, docs: bool = True) -> str:
    """The diagnosis text, or "" when the error is no device error or nothing can be said."""
    try:
        found = diagnosis_of(exc)
    except Exception as e:  # the diagnosis must never hide the user's own error
        return f"samedevice: no diagnosis ({type(e).__name__}: {e})\n"
    return render(found, docs=docs) if found is not None else ""


def diagnosis_of(exc: BaseException) -> dict | None:
    """What the live program shows about a device error, as one record (``render`` prints it;
    ``samedevice run --diagnosis-json FILE`` writes it): the template, the failing statement, each
    operand with its device, the culprit or what is still open, and the family.

    The static analysis names where each operand's value was made; the live frames say which
    operand is on the wrong device (a static origin for an operand that is in fact on the GPU is
    dropped) and, where the code alone cannot tell, why: a tensor that is not among its module's
    parameters and buffers is a plain attribute, a layer on the CPU inside a model on the GPU was
    added after the move. An operand that is a parameter of its function is followed into the
    caller's frame."""
    facts = _facts(exc)
    if facts is None:
        return None
    kb = facts.pop("_kb")
    frames = _user_frames(exc.__traceback__)
    restored = _optimizer_record(exc, frames, facts, kb)
    if restored is not None:
        return restored
    project = Project([Path.cwd()])
    first: dict | None = None
    fallback: dict | None = None  # the culprit where the live program made the operand
    callee: Diagnosis | None = None
    inner_ops: list[dict] = []
    for frame, lineno in reversed(frames[-MAX_FRAMES:]):
        src = _source(frame.f_code.co_filename)
        if src is None:
            callee = None
            continue
        diag = None
        via_caller = False
        passed_on: Diagnosis | None = None  # the caller passed a parameter of its own: go on out
        if callee is not None:
            diag = diagnose_caller(src, lineno, facts, callee, path=_short(src.path), project=project,
                                   bound=_bound_in(frame), on_cpu=bool(inner_ops) and all(o["device"].startswith("cpu") for o in inner_ops))
            if diag is not None and diag.culprit is None:
                passed_on = diag if diag.parameters else None
                diag = None  # what the caller passed tells nothing yet: this frame's own statement may
            via_caller = diag is not None
        if diag is None:
            diag = diagnose(src, lineno, facts, path=_short(src.path), project=project, bound=_bound_in(frame))
        if diag is None:
            callee = None
            continue
        operands = []
        unread: list[tuple[str, ast.AST]] = []
        for role, node in diag.operand_nodes:
            ok, value = _lookup(node, frame)
            device = _device(value) if ok else ""
            if device:
                operands.append({"expr": _text(node), "role": role, "device": device, "_value": value})
            elif not ok:
                unread.append((role, node))
        odd = _odd(operands, facts)
        if not odd and unread:
            operands += _passed_inline(unread, frame, exc.__traceback__, diag)
            odd = _odd(operands, facts)
        culprit = diag.culprit
        if culprit is not None and odd and not any(o["expr"] == culprit.expr for o in odd) \
                and any(o["expr"] == culprit.expr for o in operands):
            culprit = None  # the static origin is of an operand the live program has on the right device
        if culprit is None and odd:
            culprit = _live_culprit(odd[0], frame, src, diag, project, frames)
        if culprit is None and odd and odd[0]["role"] == "generator":
            culprit = _generator_culprit(odd[0], src, diag)
        if odd:
            seen = _seen_made(odd, culprit, facts, project, frames)
            if seen is not None:
                seen = _device_argument(seen, frames) or _moved_to_cpu_device(seen, odd, frames) or seen
            if culprit is None and seen is not None and (diag.parameters or passed_on is not None):
                # the operand was passed in: the callers' code may still say where it was left
                # unmoved (a batch whose sibling was moved); the live origin is the answer else
                if fallback is None:
                    fallback = _record(facts, kb, diag, operands, seen)
            else:
                culprit = seen
        if culprit is not None:
            culprit = _device_argument(culprit, frames) or _moved_to_cpu_device(culprit, odd, frames) or culprit
        if culprit is not None and via_caller and inner_ops:
            # the user reads the failing statement: name its operand, say what the caller passed
            inner = next((o for o in inner_ops if o["role"] == culprit.role), None) or inner_ops[0]
            culprit.chain.insert(0, f"`{inner['expr']}` is `{culprit.expr}` passed at {diag.path}:{diag.line}")
            culprit.expr = inner["expr"]
        record = _record(facts, kb, diag, operands if not via_caller or not inner_ops else inner_ops, culprit)
        if first is None and (operands or culprit is not None):
            first = record
        if culprit is not None:
            if via_caller and first is not None:
                # the statement the traceback ends at stays the one shown; the origin is the caller's
                record = {**first, "culprit": record["culprit"], "open": "",
                          "family": record["family"], "family_title": record["family_title"],
                          "family_page": record["family_page"]}
            return record
        if passed_on is not None:
            callee = passed_on
        elif diag.parameters:
            callee = diag
            inner_ops = inner_ops or [o for o in operands if o in odd] or operands
        else:
            callee = None
    if fallback is not None and first is not None:
        # the statement the traceback ends at stays the one shown; the origin is the live one
        return {**first, "culprit": fallback["culprit"], "open": "", "family": fallback["family"],
                "family_title": fallback["family_title"], "family_page": fallback["family_page"]}
    return first


def _passed_inline(unread: list[tuple[str, ast.AST]], frame: FrameType, tb: TracebackType | None,
                   diag: Diagnosis) -> list[dict]:
    """An operand written as an expression with no value to read (``self.emb(torch.arange(n))``)
    is the argument the frames below received: of the CPU tensors in their locals, one the
    simulated machine saw made on this statement's lines is that operand (the first operand
    written as a call, when several were)."""
    origins = sys.modules.get("samedevice.sim._origins")
    calls = [(role, node) for role, node in unread if isinstance(node, ast.Call)]
    if origins is None or not calls:
        return []
    while tb is not None and tb.tb_frame is not frame:
        tb = tb.tb_next
    path = frame.f_code.co_filename
    seen: set[int] = set()
    inner = tb.tb_next if tb is not None else None
    while inner is not None:
        for value in list(inner.tb_frame.f_locals.values()):
            if id(value) in seen or not _is_tensor(value) or not value.is_cpu:
                continue
            seen.add(id(value))
            site = origins.made_at(value)
            if site is not None and site[0] == path and diag.line <= site[1] <= diag.end_line:
                role, node = calls[0]
                return [{"expr": _text(node), "role": role, "device": _device(value), "_value": value}]
        inner = inner.tb_next
    return []


def _optimizer_record(exc: BaseException, frames: list[tuple[FrameType, int]], facts: dict,
                      kb: dict) -> dict | None:
    """An error inside an optimizer's step whose state is on the CPU while its parameters are
    on the accelerator: the state was restored (``load_state_dict``) before the model moved.
    The operands of torch's own update code (``exp_avgs``) mean nothing to the user; the
    optimizer their statement steps does."""
    optimizer = None
    tb = exc.__traceback__
    while tb is not None and optimizer is None:
        candidate = tb.tb_frame.f_locals.get("self")
        if "/torch/optim/" in tb.tb_frame.f_code.co_filename.replace("\\", "/") \
                and hasattr(candidate, "param_groups") and hasattr(candidate, "state"):
            optimizer = candidate
        tb = tb.tb_next
    if optimizer is None or not frames:
        return None
    try:
        params = {str(p.device) for g in optimizer.param_groups for p in g["params"]}
        # Adam's `step` counter lives on the CPU by design
        state = {str(v.device) for st in optimizer.state.values() for k, v in st.items()
                 if k != "step" and hasattr(v, "device")}
    except Exception:
        return None
    if not any(d.startswith("cpu") for d in state) or all(d.startswith("cpu") for d in params):
        return None
    frame, lineno = frames[-1]
    src = _source(frame.f_code.co_filename)
    if src is None:
        return None
    name = _name_of(optimizer, frame)
    if name is None:
        return None
    made = _method_call(name, "load_state_dict", frame)
    if made is None:
        return None
    kind = "optimizer-state-restored-before-move"
    family, why, fix = KINDS[kind]
    culprit = Culprit(expr=name, role="operand", made_at=made, kind=kind, family=family, why=why, fix=fix,
                      chain=[f"`{name}`'s state is on {', '.join(sorted(state))}, its parameters on "
                             f"{', '.join(sorted(params))}"])
    statement = _statement_text(src, lineno)
    diag = Diagnosis(path=_short(src.path), line=lineno, end_line=lineno, statement=statement,
                     function=frame.f_code.co_name, cls="", operands=[name], culprit=culprit, read=[])
    operand = {"expr": name, "role": "operand",
               "device": f"state {', '.join(sorted(state))}; parameters {', '.join(sorted(params))}"}
    return _record(facts, kb, diag, [operand], culprit)


def _name_of(value: Any, frame: FrameType) -> str | None:
    """The frame's name for ``value``: a variable, or an attribute of ``self``."""
    scope = frame.f_locals if frame.f_code.co_name != "<module>" else frame.f_globals
    for name, v in list(scope.items()):
        if v is value and not name.startswith("__"):
            return name
    owner = frame.f_locals.get("self")
    for attr, v in list(getattr(owner, "__dict__", {}).items()):
        if v is value:
            return f"self.{attr}"
    return None


def _method_call(receiver: str, method: str, frame: FrameType) -> str | None:
    """``path:line  code`` of the first ``<receiver>.<method>(...)`` in the files of the frames,
    the innermost file first."""
    seen: list[str] = []
    f: FrameType | None = frame
    while f is not None:
        path = f.f_code.co_filename
        if path not in seen and not any(part in path.replace("\\", "/") for part in _INTERNAL):
            seen.append(path)
        f = f.f_back
    for path in seen:
        src = _source(path)
        if src is None:
            continue
        calls = [n for n in ast.walk(src.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == method and _text(n.func.value) == receiver]
        if calls:
            first = min(calls, key=lambda n: n.lineno)
            return f"{_short(path)}:{first.lineno}  {src.lines[first.lineno - 1].strip()}"
    return None


def _statement_text(src: SourceFile, lineno: int) -> str:
    """The whole statement holding ``lineno``, one line."""
    best = None
    for n in ast.walk(src.tree):
        if isinstance(n, ast.stmt) and not isinstance(n, ast.If | ast.For | ast.While | ast.With | ast.Try
                                                        | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                and n.lineno <= lineno <= (n.end_lineno or n.lineno):
            best = n if best is None or n.lineno >= best.lineno else best
    if best is None:
        return src.lines[lineno - 1].strip() if 0 < lineno <= len(src.lines) else ""
    return " ".join(" ".join(src.lines[best.lineno - 1:best.end_lineno or best.lineno]).split())


def _record(facts: dict, kb: dict, diag: Diagnosis, operands: list[dict], c: Culprit | None) -> dict:
    family = c.family if c is not None else (facts["families"][0] if facts["families"] else "")
    fam = kb["families"].get(family, {"title": family, "page": f"families/{family.lower()}/"}) if family else None
    return {
        "template": facts["template"], "template_title": facts["title"],
        "path": diag.path, "line": diag.line, "function": diag.function or "<module>",
        "statement": diag.statement,
        "operands": [{k: v for k, v in o.items() if not k.startswith("_")} for o in operands],
        "culprit": None if c is None else {"expr": c.expr, "role": c.role, "made_at": c.made_at,
                                           "kind": c.kind, "why": c.why, "fix": c.fix},
        "open": "" if c is not None else diag.open,
        "family": family, "family_title": fam["title"] if fam else "", "family_page": fam["page"] if fam else "",
    }


# frames read, innermost first: a value passed down through a model's layers crosses many
MAX_FRAMES = 12
_SOURCES: dict[str, SourceFile | None] = {}
_FACTS_NONE: dict = {}  # the origin of one value does not depend on the message


def _source(path: str) -> SourceFile | None:
    if path not in _SOURCES:
        text = "".join(linecache.getlines(path))
        src = None
        if text:
            try:
                src = SourceFile(ast.parse(text), path, text, local=Path(path) if os.path.isfile(path) else None)
            except (SyntaxError, ValueError, RecursionError):
                src = None
        _SOURCES[path] = src
    return _SOURCES[path]


def _odd(operands: list[dict], facts: dict) -> list[dict]:
    """The operands on the wrong side: on the CPU when the others are on an accelerator; for a
    generator's error (T8), the generator, whichever side it is on."""
    if facts.get("template") == "T8":
        return [o for o in operands if o["role"] == "generator"]
    devices = {o["device"] for o in operands if "," not in o["device"] and o["device"] != "no parameters"}
    # the message names the two sides when the statement's other operand is not a plain name
    devices |= {d for d in facts.get("devices") or [] if isinstance(d, str)}
    if len(devices) >= 2 and not any(d.startswith("cpu") for d in devices):
        # two accelerators: the odd one is off the process's current device (a rank's own GPU)
        current = _current_device()
        if current is None or current not in devices:
            return []
        return [o for o in operands if o["device"] != current and "," not in o["device"]
                and o["device"] != "no parameters"]
    if len(devices) < 2 or not any(d.startswith("cpu") for d in devices):
        return []
    return [o for o in operands if o["device"].startswith("cpu")]


def _current_device() -> str | None:
    torch = sys.modules.get("torch")
    try:
        return f"cuda:{torch.cuda.current_device()}" if torch is not None and torch.cuda.is_available() else None
    except Exception:
        return None


def _live_culprit(odd: dict, frame: FrameType, src: SourceFile, diag: Diagnosis,
                  project: Project, frames: Sequence[tuple[FrameType, int]] = ()) -> Culprit | None:
    """What the live objects say of an operand on the CPU that the code alone did not decide."""
    expr = odd["expr"]
    value = odd["_value"]
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Name) and getattr(value, "_parameters", None) is None:
        return origin_on_cpu(src, diag.line, node.id, _FACTS_NONE, role=odd["role"], path=diag.path, project=project,
                             bound=_bound_in(frame))
    holder, attr = _holder(node, frame)
    if getattr(value, "_parameters", None) is not None:  # a module on the CPU
        return _module_culprit(odd, value, frame, src, diag, project, frames)
    if holder is None or attr is None:
        return None
    registered = getattr(holder, "_parameters", None), getattr(holder, "_buffers", None)
    is_module = registered[0] is not None
    if is_module and any(value is t for d in registered if d for t in d.values()):
        # a registered tensor of a module left on the CPU: the module was made after the move,
        # or never moved
        return _module_culprit(odd, holder, frame, src, diag, project, frames)
    made = _assignment(type(holder), attr)
    if made is None:
        return None
    if is_module:
        kind = "plain-tensor-attribute" if isinstance(node, ast.Attribute) and _depth(node) == 1 else "helper-object-attribute"
    else:
        kind = "helper-object-attribute" if _depth(node) > 1 else "factory-without-device"
    family, why, fix = KINDS[kind]
    owner = type(holder).__name__
    return Culprit(expr=expr, role=odd["role"], made_at=made, kind=kind, family=family, why=why, fix=fix,
                   chain=[f"`{expr}` is on the CPU: a plain attribute `{attr}` of a `{owner}`"
                          + (" (not one of its parameters or buffers)" if is_module else "")])


def _generator_culprit(odd: dict, src: SourceFile, diag: Diagnosis) -> Culprit | None:
    """A generator on the other device than the op that draws from it: where it was made."""
    node = _parse_expr(odd["expr"])
    if not isinstance(node, ast.Name):
        return None
    found = binding_of(src, diag.line, node.id)
    if found is None:
        return None
    family, why, fix = KINDS["generator-on-other-device"]
    return Culprit(expr=odd["expr"], role="generator",
                   made_at=f"{diag.path}:{found.lineno}  {_statement_text(src, found.lineno)}",
                   kind="generator-on-other-device", family=family, why=why, fix=fix,
                   chain=[f"`{odd['expr']}` is a generator on {odd['device']}, the op runs on the other device"])


def _module_culprit(odd: dict, module: Any, frame: FrameType, src: SourceFile, diag: Diagnosis,
                    project: Project, frames: Sequence[tuple[FrameType, int]] = ()) -> Culprit | None:
    """A layer on the CPU: added after its model moved (the model is on the GPU), or a model
    never moved at all (the whole model is on the CPU)."""
    root = _root_model(module, frame, frames)
    if root is None:
        node = _parse_expr(odd["expr"])
        if isinstance(node, ast.Name):
            return origin_on_cpu(src, diag.line, node.id, _FACTS_NONE, role="weight", path=diag.path, project=project,
                                 bound=_bound_in(frame))
        return None
    outer, name, model, where = root
    # the wrong side: the CPU, or under two GPUs the one off the rank's device (a model restored
    # onto the GPU that saved it)
    wrong = odd["device"]
    if any(d != wrong for d in _devices(model)):
        made = None
        path = next((n for n, m in model.named_modules() if m is module), "")
        # the outermost part of the path that is wholly on the CPU is what was added late
        # (model.action_head = NewHead(...) holds the CPU layer action_head.vlln)
        parts = path.split(".") if path else []
        added, attr = module, parts[-1] if parts else ""
        for i in range(1, len(parts) + 1):
            sub = model.get_submodule(".".join(parts[:i]))
            if _devices(sub) and all(d == wrong for d in _devices(sub)):
                added, attr = sub, parts[i - 1]
                break
        if attr and not attr.isdigit():
            made = _attribute_store(attr, frame, outside_init=True)
        if made is None:
            made = _constructor_call(type(added), frame)
        kind = "layer-created-after-move"
        why_live = f"`{odd['expr']}` is on the CPU inside `{name}`, whose other parameters are on the GPU"
    elif name.startswith("."):  # an attribute of an object: where it was last stored
        made = _attribute_store(name[1:], frame, outside_init=False)
        name = name[1:]
        kind = "model-not-moved"
        why_live = f"`{name}` (which holds `{odd['expr']}`) has all its parameters on the CPU"
    else:
        found = binding_of(outer, where, name)
        aliases = [name]
        for _ in range(8):
            if found is None:
                break
            if _wraps(found, name):
                # model = torch.compile(model) / DDP(model): the model itself was bound before
                earlier = binding_of(outer, found.lineno, name)
            else:
                # raw_model = model.module if ddp else model: the same model under another name
                other = _aliased(found)
                if other is None or other in aliases:
                    break
                aliases.append(other)
                earlier = binding_of(outer, found.lineno, other)
                name = other
            if earlier is None or earlier.lineno >= found.lineno:
                break
            found = earlier
        if found is not None:
            found = _built_as(outer, found, name, type(model))
        made = f"{_short(outer.path)}:{found.lineno}  {outer.lines[found.lineno - 1].strip()}" if found is not None else None
        kind = "model-not-moved"
        why_live = f"`{name}` (which holds `{odd['expr']}`) has all its parameters on {wrong}"
        listed = _plain_container(found, model, frame)
        if listed is not None:
            # for gcl in self.gcls: the layer comes from a plain list its model's .to() never saw
            made, kind = listed[1], "modules-in-plain-list"
            why_live = f"`{name}` comes from `self.{listed[0]}`, a plain {type(listed[2]).__name__} of layers"
        if not wrong.startswith("cpu") and found is not None and _loads_without_map_location(outer, found):
            kind = "torch-load-no-map-location"  # restored onto the GPU that saved it
        back = _moved_back(outer, aliases)
        if back is not None and back.lineno > where and function_at(outer, back.lineno) is function_at(outer, where) \
                and not _in_one_loop(outer, where, back.lineno):
            back = None  # later in the code that is running, outside a loop around both: not run yet
        if back is not None:
            # it was moved, then a later phase (a checkpoint's `model.cpu().state_dict()`) moved
            # it to the CPU and nothing moved it back
            made, kind = f"{_short(outer.path)}:{back.lineno}  {_statement_text(outer, back.lineno)}", "model-moved-to-cpu"
            why_live += f"; `{_text(back.func.value)}.{back.func.attr}(...)` at line {back.lineno} moved it there"
        assigned = _assigned_state(outer, aliases, where)
        if back is None and assigned is not None:
            # load_state_dict(..., assign=True) puts the checkpoint's own tensors in the model:
            # restored onto the CPU, they replace the moved parameters
            made, kind = f"{_short(outer.path)}:{assigned.lineno}  {_statement_text(outer, assigned.lineno)}", "restored-on-cpu"
            why_live += f"; `load_state_dict(..., assign=True)` at line {assigned.lineno} replaced its parameters with the checkpoint's"
    if made is None:
        return None
    family, why, fix = KINDS[kind]
    return Culprit(expr=odd["expr"], role="weight", made_at=made, kind=kind, family=family, why=why, fix=fix,
                   chain=[why_live])


# static kinds that name the statement making a value: where the running program saw the tensor
# made is surer (the branch that ran, the factory inside the helper the static trace stopped at)
_REFINED_BY_ORIGIN = frozenset({"factory-without-device", "transfer-to-cpu", "cpu-device-string"})


def _seen_made(odd: list[dict], culprit: Culprit | None, facts: dict, project: Project,
               frames: list[tuple[FrameType, int]]) -> Culprit | None:
    """The culprit from where the simulated machine saw the CPU operand made (``sim._origins``),
    when the code alone named none, or named a factory the program did not run. A tensor made by
    code that has returned since (a dataset built before training) is data the program never
    moved; one made by a function still running the failing computation is its own factory."""
    origins = sys.modules.get("samedevice.sim._origins")
    if origins is None:
        return culprit
    ordered = sorted(odd, key=lambda o: culprit is None or o["expr"] != culprit.expr)
    for o in ordered:
        site = origins.made_at(o["_value"])
        if site is None:
            continue
        src = _source(site[0])
        if src is None:
            continue
        made = origin_at(src, site[1], o["expr"], facts, role=o["role"], path=_short(src.path), project=project)
        if made is None:
            return culprit
        if culprit is None:
            return _as_data(made, src, site[1], frames)
        if culprit.expr != o["expr"] or culprit.kind not in _REFINED_BY_ORIGIN \
                or any(CALL_MUST_MOVE in step for step in culprit.chain):
            return culprit
        if made.made_at.partition("  ")[0] == culprit.made_at.partition("  ")[0]:
            return culprit
        if made.kind == "made-on-cpu":
            made.kind, made.family, made.why, made.fix = culprit.kind, culprit.family, culprit.why, culprit.fix
        made.chain = [*culprit.chain, *made.chain]
        return _as_data(made, src, site[1], frames)
    return culprit


def _as_data(made: Culprit, src: SourceFile, line: int, frames: list[tuple[FrameType, int]]) -> Culprit:
    """A value made by code that has returned since, outside the failing computation, is data
    the program prepared and never moved (a dataset built before training); a value a returned
    helper of the computation made by no factory the code names, is named where it came in.
    Either way the user reads the call that brought it in (``features = load_cora()``), where a
    device argument or a move belongs; the line inside stays in the chain."""
    stored = _stored_on_self(src, line)
    if stored is not None and made.kind in ("factory-without-device", "made-on-cpu"):
        # ``self.pos_ids = torch.arange(n)`` in ``__init__``: the object's own state, which its
        # ``.to()`` does not move (a plain attribute), not data the program was given
        family, why, fix = KINDS[stored]
        made.kind, made.family, made.why, made.fix = stored, family, why, fix
        return made
    if made.kind == "factory-without-device" and not _running(src, line, frames) and _from_sizes(src, line):
        # a helper the program called by name made it from sizes (a mask, weights, a hidden
        # state: ``w = torch.zeros(T)`` in ``recall_weights``): it is no data read from
        # anywhere, and its factory is where the device belongs
        entry = _entry_call(src, line, frames)
        fn = function_at(src, line)
        if entry is not None and fn is not None and entry[2] == getattr(fn, "name", None):
            made.chain.append(f"made from sizes inside `{entry[2]}`, called at {entry[0]}")
            return made
    if made.kind in ("factory-without-device", "made-on-cpu", "transfer-to-cpu") and not _running(src, line, frames):
        family, why, fix = KINDS["input-not-moved"]
        made.kind, made.family, made.why, made.fix = "input-not-moved", family, why, fix
        made.chain.append("the code that made it has returned: the program prepared it as data and never moved it")
    elif made.kind != "made-on-cpu" or _in_frames(src, line, frames):
        return made
    entry = _entry_call(src, line, frames)
    if entry is not None:
        made.chain.append(f"made inside `{entry[2]}` at {made.made_at.partition('  ')[0]}, called at {entry[0]}")
        made.made_at = entry[0] + "  " + entry[1]
    return made


def _stored_on_self(src: SourceFile, line: int) -> str | None:
    """The kind of a value the statement at ``line`` stores as ``self.<attr> = ...`` in a method:
    a plain tensor attribute of a module (a class whose bases name ``Module``), else an
    attribute of a helper object; None for any other statement."""
    for klass in (n for n in ast.walk(src.tree) if isinstance(n, ast.ClassDef)):
        if not klass.lineno <= line <= (klass.end_lineno or klass.lineno):
            continue
        for fn in klass.body:
            if not isinstance(fn, ast.FunctionDef) or not fn.lineno <= line <= (fn.end_lineno or fn.lineno):
                continue
            for stmt in ast.walk(fn):
                if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.lineno == line:
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                           for t in targets):
                        module = any("Module" in (_text(b) or "") for b in klass.bases)
                        return "plain-tensor-attribute" if module else "helper-object-attribute"
    return None


def _from_sizes(src: SourceFile, line: int) -> bool:
    """Does the statement at ``line`` make its tensor with a ``torch.<factory>`` from sizes?"""
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno):
            q = src.qual(node.func) or ""
            if q.startswith("torch.") and q.count(".") == 1 and q[len("torch."):] in SIZE_FACTORIES:
                return True
    return False


def _running(src: SourceFile, line: int, frames: list[tuple[FrameType, int]]) -> bool:
    """Is the function holding ``line`` of ``src`` part of the failing computation: one of the
    traceback's frames, or a helper that one of their functions calls (``pos = positions(n)`` in
    ``forward``)? A dataset's loader, called once before training, is neither."""
    fn = function_at(src, line)
    if fn is None:
        return False  # module level: the script itself runs, but it made the value before
    lo, hi = fn.lineno, fn.end_lineno or fn.lineno
    name = getattr(fn, "name", "")
    for f, n in frames:
        if f.f_code.co_filename == src.path and lo <= n <= hi:
            return True
        caller_src = _source(f.f_code.co_filename)
        caller = function_at(caller_src, n) if caller_src is not None else None
        if caller is not None and any(isinstance(c, ast.Call) and call_name(c) == name for c in ast.walk(caller)):
            return True
    return False


# kinds whose statement placed the value itself: a `.to(self.device)` there may name a device the
# object was told (or defaulted to) when it was built
_PLACED_HERE = frozenset({"factory-without-device", "made-on-cpu", "cpu-device-string"})
_MAX_BUILD_HOPS = 4


def _device_argument(c: Culprit, frames: list[tuple[FrameType, int]]) -> Culprit | None:
    """The statement that made the CPU value placed it on ``self.<attr>`` (``.to(self.device)``,
    ``device=self.device``), which holds the CPU: the object was built without its device
    argument (the parameter's default, ``device="cpu"``) or with the CPU. Follow the attribute
    to the ``__init__`` parameter it was stored from, and that parameter to the call that built
    the object, through classes that pass their own parameter on (``Encoder(..., device)``
    inside ``Transformer.__init__``): the culprit is the outermost call that left it out."""
    if c.kind not in _PLACED_HERE:
        return None
    where = c.made_at.partition("  ")[0]
    path, _, line_text = where.rpartition(":")
    if not line_text.isdigit():
        return None
    line = int(line_text)
    frame, src = None, None
    for f, n in reversed(frames):  # the frame running the function that holds the line
        if _short(f.f_code.co_filename) != path:
            continue
        src = _source(f.f_code.co_filename)
        fn = function_at(src, line) if src is not None else None
        if fn is not None and fn is function_at(src, n):
            frame = f
            break
    if src is None or frame is None:
        return None
    stmt_calls = [n for n in ast.walk(src.tree) if isinstance(n, ast.Call)
                  and n.lineno <= line <= (n.end_lineno or n.lineno)]
    target = None
    for call in stmt_calls:
        arg = kwarg(call, "device")
        if arg is None and isinstance(call.func, ast.Attribute) and call.func.attr == "to" and call.args:
            arg = call.args[0]
        if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == "self":
            target = arg
            break
    if target is None:
        return None
    ok, value = _lookup(target, frame)
    if not ok or not str(value).startswith("cpu"):
        return None
    obj = frame.f_locals.get("self")
    param = _stored_from(type(obj), target.attr)
    if obj is None or param is None:
        return None
    chain = [f"`{_text(target)}` is {str(value)!r}: `{type(obj).__name__}` stores it from its `{param}` argument"]
    cls: type | tuple[str, list[str], int] = type(obj)
    for _ in range(_MAX_BUILD_HOPS):
        built = _build_call(cls[0] if isinstance(cls, tuple) else cls.__name__, frames)
        if built is None:
            return None
        call_src, call, owner = built
        passed = _passed(call, cls, param)
        at = f"{_short(call_src.path)}:{call.lineno}"
        name = cls[0] if isinstance(cls, tuple) else cls.__name__
        if passed is None:
            family, why, fix = KINDS["device-argument-omitted"]
            chain.append(f"`{name}(...)` at {at} does not pass `{param}`, so its default is used")
            return Culprit(expr=c.expr, role=c.role, made_at=f"{at}  {_statement_text(call_src, call.lineno)}",
                           kind="device-argument-omitted", family=family, why=why,
                           fix=fix.replace("<param>", param), chain=[*c.chain, *chain])
        if isinstance(passed, ast.Name) and owner is not None and passed.id in owner[1]:
            chain.append(f"`{name}(...)` at {at} passes `{passed.id}`, the `{owner[0]}` argument")
            cls, param = owner, passed.id
            continue
        family, why, fix = KINDS["cpu-device-string"]
        chain.append(f"`{name}(...)` at {at} passes `{_text(passed)}` as `{param}`")
        return Culprit(expr=c.expr, role=c.role, made_at=f"{at}  {_statement_text(call_src, call.lineno)}",
                       kind="cpu-device-string", family=family, why=why, fix=fix, chain=[*c.chain, *chain])
    return None


def _moved_to_cpu_device(c: Culprit, odd: list[dict], frames: list[tuple[FrameType, int]]) -> Culprit | None:
    """Data named as never moved, that the code did move -- to a device that holds the CPU:
    ``source = source.to(self.device)`` with ``self.device`` read from the model before the
    model moved. The culprit is where that device was set."""
    if c.kind != "input-not-moved" or not odd:
        return None
    value = odd[0].get("_value")
    for f, n in reversed(frames):
        src = _source(f.f_code.co_filename)
        fn = function_at(src, n) if src is not None else None
        if fn is None:
            continue
        for stmt in _own_statements(fn):
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)
                    and stmt.value.func.attr == "to" and stmt.lineno < n):
                continue
            target = stmt.value.args[0] if stmt.value.args else kwarg(stmt.value, "device")
            if target is None or f.f_locals.get(stmt.targets[0].id) is not value:
                continue
            ok, dev = _lookup(target, f)
            if not ok or not str(dev).startswith("cpu"):
                continue
            made = None
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                owner = f.f_locals.get("self")
                made = _assignment(type(owner), target.attr) if owner is not None else None
            elif isinstance(target, ast.Name):
                bound = binding_of(src, stmt.lineno, target.id)
                if bound is not None:
                    made = f"{_short(src.path)}:{bound.lineno}  {_statement_text(src, bound.lineno)}"
            if made is None:
                return None
            kind = "device-read-before-move" if ".parameters()" in made and ".device" in made else "cpu-device-string"
            family, why, fix = KINDS[kind]
            return Culprit(expr=c.expr, role=c.role, made_at=made, kind=kind, family=family, why=why, fix=fix,
                           chain=[*c.chain, f"`{_text(stmt)}` at {_short(src.path)}:{stmt.lineno} moved it to "
                                            f"`{_text(target)}`, which is {str(dev)!r}"])
    return None


def _stored_from(cls: type, attr: str) -> str | None:
    """The ``__init__`` parameter that ``self.<attr> = <param>`` stores, in the class or a base."""
    for klass in getattr(cls, "__mro__", ()):
        init = klass.__dict__.get("__init__")
        if init is None or klass.__module__.startswith("torch."):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(init))
            params = list(inspect.signature(init).parameters)
        except (OSError, TypeError, ValueError):
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in params and any(
                    isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                    and t.value.id == "self" for t in n.targets):
                return n.value.id
    return None


def _build_call(name: str, frames: list[tuple[FrameType, int]]
                ) -> tuple[SourceFile, ast.Call, tuple[str, list[str], int] | None] | None:
    """The call building the class ``name`` in the files of the traceback's frames, and the
    class whose ``__init__`` holds it: (its name, that ``__init__``'s parameters after ``self``,
    how many of them are positional), None at module level or in a plain function.

    Of several such calls, one that ran is taken: a call in a function still running (a frame's,
    at or before the frame's current line), else in a function since returned, else the last."""
    seen: list[str] = []
    for f, _ in frames:
        if f.f_code.co_filename not in seen:
            seen.append(f.f_code.co_filename)
    for path in seen:
        src = _source(path)
        if src is None:
            continue
        calls = [n for n in ast.walk(src.tree) if isinstance(n, ast.Call) and call_name(n) == name]
        if not calls:
            continue
        call = max(calls, key=lambda n: (_ran(src, n.lineno, frames), n.lineno))
        owner = None
        for klass in (n for n in ast.walk(src.tree) if isinstance(n, ast.ClassDef)):
            for fn in klass.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__" and \
                        fn.lineno <= call.lineno <= (fn.end_lineno or fn.lineno):
                    positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][1:]
                    owner = (klass.name, [*positional, *(a.arg for a in fn.args.kwonlyargs)], len(positional))
        return src, call, owner
    return None


def _ran(src: SourceFile, line: int, frames: list[tuple[FrameType, int]]) -> int:
    """2: ``line`` is in a function a frame is running, at or before that frame's line (it ran);
    1: in no running function (a function since returned, or the module of no frame); 0: in a
    running function, after its current line (it has not run yet)."""
    fn = function_at(src, line)
    lo, hi = (fn.lineno, fn.end_lineno or fn.lineno) if fn is not None else (None, None)
    for f, n in frames:
        if f.f_code.co_filename != src.path:
            continue
        if (fn is None and function_at(src, n) is None) or (fn is not None and lo <= n <= hi):
            return 2 if line <= n else 0
    return 1


def _passed(call: ast.Call, cls: type | tuple[str, list[str], int], param: str) -> ast.expr | None:
    """What ``call`` passes for the ``__init__`` parameter ``param`` of ``cls`` (a live class, or
    one met in the source as its name, parameters and how many are positional), by keyword or
    position (a keyword-only parameter by keyword alone)."""
    found = kwarg(call, param)
    if found is not None:
        return found
    if isinstance(cls, tuple):
        params = cls[1][:cls[2]]
    else:
        try:
            params = [p.name for p in inspect.signature(cls.__init__).parameters.values()
                      if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            return None
    if param in params and params.index(param) < len(call.args) and \
            not any(isinstance(a, ast.Starred) for a in call.args[:params.index(param) + 1]):
        return call.args[params.index(param)]
    return None


def _in_frames(src: SourceFile, line: int, frames: list[tuple[FrameType, int]]) -> bool:
    """Is the function holding ``line`` one of the traceback's frames (still running)?"""
    fn = function_at(src, line)
    if fn is None:
        return True  # module level: the script's own frame
    lo, hi = fn.lineno, fn.end_lineno or fn.lineno
    return any(f.f_code.co_filename == src.path and lo <= n <= hi for f, n in frames)


def _entry_call(src: SourceFile, line: int, frames: list[tuple[FrameType, int]]) -> tuple[str, str, str] | None:
    """Where the running program called the function, since returned, that made a value at
    ``line`` of ``src``: ("path:line", the statement, the function's name), from the outermost
    frame of the traceback in, among the statements that ran before its current line. A method
    is also reached through its class (``data.Corpus(path)`` runs ``Corpus.tokenize``)."""
    fn = function_at(src, line)
    if fn is None:
        return None
    cls = next((c for c in ast.walk(src.tree) if isinstance(c, ast.ClassDef) and fn in c.body), None)
    # the function itself first (dataset.get_edges(...)), its class only when no call names it
    for name in (getattr(fn, "name", ""), cls.name if cls is not None else ""):
        if not name:
            continue
        for f, n in frames:
            caller_src = _source(f.f_code.co_filename)
            if caller_src is None:
                continue
            scope = function_at(caller_src, n) or caller_src.tree
            for node in _own_statements(scope):
                end = getattr(node, "end_lineno", node.lineno) or node.lineno
                if end >= n:
                    continue
                if any(isinstance(c, ast.Call) and call_name(c) == name for c in ast.walk(node)):
                    text = _statement_text(caller_src, node.lineno)
                    return f"{_short(caller_src.path)}:{node.lineno}", text, name
    return None


def _own_statements(scope: ast.AST) -> list[ast.stmt]:
    """The simple statements of a function or module, in blocks too, not those of nested
    functions and classes."""
    found: list[ast.stmt] = []
    todo = list(getattr(scope, "body", []))
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        blocks = [x for b in ("body", "handlers", "orelse", "finalbody") for x in getattr(node, b, None) or []]
        if blocks:  # a compound statement: its blocks' statements, in order
            todo[:0] = blocks
        else:
            found.append(node)
    return found


def _bound_in(frame: FrameType) -> Callable[[str, bool], bool]:
    """Whether a name has a value in the frame now (the module's globals for its top level)."""
    local, module = frame.f_locals, frame.f_globals

    def bound(name: str, module_scope: bool) -> bool:
        return name in module if module_scope else (name in local or name in module)

    return bound


def _wraps(stmt: ast.AST, name: str) -> bool:
    """``name = wrapper(name, ...)``: a rebinding that wraps the same object."""
    value = getattr(stmt, "value", None)
    return isinstance(stmt, ast.Assign) and isinstance(value, ast.Call) and any(
        isinstance(a, ast.Name) and a.id == name for a in value.args)


def _in_one_loop(src: SourceFile, a: int, b: int) -> bool:
    """Do lines ``a`` and ``b`` lie in one loop's body (so the later one may have run before)?"""
    return any(isinstance(n, ast.For | ast.AsyncFor | ast.While)
               and n.lineno <= min(a, b) and max(a, b) <= (n.end_lineno or n.lineno) for n in ast.walk(src.tree))


def _aliased(stmt: ast.AST) -> str | None:
    """``raw_model = model.module if ddp else model`` / ``net = model`` / ``m = model.module``:
    the other name this binding gives the same object, else None."""
    value = getattr(stmt, "value", None)
    if not isinstance(stmt, ast.Assign) or value is None:
        return None
    branches = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
    for b in branches:
        if isinstance(b, ast.Attribute) and b.attr in ("module", "_orig_mod") and isinstance(b.value, ast.Name):
            return b.value.id
        if isinstance(b, ast.Name):
            return b.id
    return None


def _moved_back(src: SourceFile, names: list[str]) -> ast.Call | None:
    """The last ``<name>.cpu()`` / ``<name>.to("cpu")`` on one of the names a model goes by, in
    a file where it is also moved to an accelerator: the phase that took it off the device."""
    moved_back: list[ast.Call] = []
    moved_to_device = False
    for n in ast.walk(src.tree):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name) and n.func.value.id in names):
            continue
        if n.func.attr == "cpu" and not n.args:
            moved_back.append(n)
        elif n.func.attr == "to" and n.args:
            target = n.args[0]
            if isinstance(target, ast.Constant) and target.value == "cpu":
                moved_back.append(n)
            else:
                moved_to_device = True
        elif n.func.attr == "cuda":
            moved_to_device = True
    # model = Net(...).to(device): the move is on the call the name is bound to
    moved_to_device = moved_to_device or any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in n.targets)
        and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute)
        and (n.value.func.attr == "cuda" or (n.value.func.attr == "to" and n.value.args and not (
            isinstance(n.value.args[0], ast.Constant) and n.value.args[0].value == "cpu")))
        for n in ast.walk(src.tree))
    if not moved_back or not moved_to_device:
        return None
    return max(moved_back, key=lambda c: c.lineno)


def _plain_container(found: ast.AST | None, model: Any, frame: FrameType) -> tuple[str, str, Any] | None:
    """When ``found`` is ``for <name> in self.<attr>:`` over a plain list, tuple or dict of a
    running frame's ``self`` that holds ``model``: (attr, where ``self.<attr>`` was assigned, the
    container)."""
    if not (isinstance(found, ast.For) and isinstance(found.iter, ast.Attribute)
            and isinstance(found.iter.value, ast.Name) and found.iter.value.id == "self"):
        return None
    attr = found.iter.attr
    f: FrameType | None = frame
    while f is not None:
        owner = f.f_locals.get("self") if f.f_code.co_name != "<module>" else None
        container = getattr(owner, "__dict__", {}).get(attr) if owner is not None else None
        if isinstance(container, list | tuple | dict):
            items = container.values() if isinstance(container, dict) else container
            if any(item is model for item in items):
                made = _assignment(type(owner), attr)
                return (attr, made, container) if made is not None else None
        f = f.f_back
    return None


def _assigned_state(src: SourceFile, names: list[str], where: int) -> ast.Call | None:
    """The last ``<name>.load_state_dict(..., assign=True)`` before ``where`` (it ran)."""
    found = [n for n in ast.walk(src.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "load_state_dict" and isinstance(n.func.value, ast.Name)
             and n.func.value.id in names and n.lineno <= where
             and any(k.arg == "assign" and isinstance(k.value, ast.Constant) and k.value.value is True
                     for k in n.keywords)]
    return max(found, key=lambda c: c.lineno) if found else None


def _parse_expr(expr: str) -> ast.AST | None:
    try:
        return ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None


def _devices(module: Any) -> set[str]:
    try:
        return {str(t.device) for t in (*module.parameters(), *module.buffers())}
    except Exception:
        return set()


def _root_model(module: Any, frame: FrameType, frames: Sequence[tuple[FrameType, int]] = ()
                ) -> tuple[SourceFile, str, Any, int] | None:
    """The model that holds ``module``, as the program names it: the largest module among the
    variables of its frames (and their attributes: ``self.model``) that contains it, the
    outermost frame first: (its file, its name -- ``model`` or ``.model`` for an attribute --,
    the model, the frame's line: the traceback's, since a frame the error passed through an
    ``except`` clause of reports that clause's line)."""
    tb_line = {id(f): n for f, n in frames}
    best: tuple[int, int, SourceFile, str, Any, int] | None = None
    depth = 0
    f: FrameType | None = frame
    while f is not None:
        depth += 1
        path = f.f_code.co_filename
        src = _source(path) if not any(part in path.replace("\\", "/") for part in _INTERNAL) else None
        if src is not None:
            scope = f.f_locals if f.f_code.co_name != "<module>" else f.f_globals
            for name, value in list(scope.items()):
                if name.startswith("__"):
                    continue
                candidates = [(name, value)]
                if name == "self" or getattr(value, "_parameters", None) is None:
                    # an object holding the model: `self.model`, `trainer.model`
                    candidates = [(f".{k}", v) for k, v in list(getattr(value, "__dict__", {}).items())
                                  if getattr(v, "_parameters", None) is not None]
                for shown, candidate in candidates:
                    try:
                        size = sum(1 for _ in candidate.modules())
                        holds = any(m is module for m in candidate.modules())
                    except Exception:
                        continue
                    if holds and (best is None or (size, depth) >= (best[0], best[1])):
                        best = (size, depth, src, shown, candidate, tb_line.get(id(f), f.f_lineno))
        f = f.f_back
    return None if best is None else best[2:]


def _built_as(src: SourceFile, found: ast.AST, name: str, cls: type) -> ast.AST:
    """Of two bindings of ``name`` in the two branches of one ``if`` (``model = A(...)`` /
    ``else: model = B(...)``), the one whose call builds the live model's class: the last one
    by line is the branch that did not run. ``found`` otherwise."""
    value = getattr(found, "value", None)
    if not isinstance(value, ast.Call) or call_name(value) == cls.__name__:
        return found
    b: ast.AST | None = found
    for _ in range(8):
        b = binding_of(src, b.lineno, name) if b is not None else None
        if b is None:
            break
        v = getattr(b, "value", None)
        if isinstance(v, ast.Call) and call_name(v) == cls.__name__ and _other_branches(src, found, b):
            return b
    return found


def _other_branches(src: SourceFile, a: ast.AST, b: ast.AST) -> bool:
    """Are ``a`` and ``b`` in the two branches of one ``if`` (never both run)?"""
    def inside(block: list[ast.stmt], n: ast.AST) -> bool:
        return bool(block) and block[0].lineno <= n.lineno <= (block[-1].end_lineno or block[-1].lineno)

    return any(isinstance(n, ast.If) and ((inside(n.body, a) and inside(n.orelse, b))
                                          or (inside(n.body, b) and inside(n.orelse, a)))
               for n in ast.walk(src.tree))


def _loads_without_map_location(src: SourceFile, stmt: ast.AST) -> bool:
    """Is ``stmt``'s value a ``torch.load(...)`` that says nothing of where to restore?"""
    value = getattr(stmt, "value", None)
    return isinstance(value, ast.Call) and (src.qual(value.func) or "") == "torch.load" \
        and kwarg(value, "map_location") is None and len(value.args) < 2


def _constructor_call(cls: type, frame: FrameType) -> str | None:
    """The last call of a user-defined class (``LoRALinear(...)``) in the program's files: where
    an instance of it was made."""
    if cls.__module__.startswith("torch."):
        return None  # nn.Linear(...): too many to tell which one
    seen: list[str] = []
    f: FrameType | None = frame
    while f is not None:
        path = f.f_code.co_filename
        if path not in seen and not any(part in path.replace("\\", "/") for part in _INTERNAL):
            seen.append(path)
        f = f.f_back
    for path in seen:
        src = _source(path)
        if src is None:
            continue
        calls = [n for n in ast.walk(src.tree) if isinstance(n, ast.Call) and (
            (isinstance(n.func, ast.Name) and n.func.id == cls.__name__)
            or (isinstance(n.func, ast.Attribute) and n.func.attr == cls.__name__))]
        if calls:
            last = max(calls, key=lambda n: n.lineno)
            return f"{_short(path)}:{last.lineno}  {src.lines[last.lineno - 1].strip()}"
    return None


def _holder(node: ast.AST, frame: FrameType) -> tuple[Any, str | None]:
    """``a.b.c`` -> (the value of ``a.b``, "c")."""
    if isinstance(node, ast.Attribute):
        ok, base = _lookup(node.value, frame)
        return (base if ok else None), node.attr
    return None, None


def _depth(node: ast.AST) -> int:
    n = 0
    while isinstance(node, ast.Attribute):
        n += 1
        node = node.value
    return n


def _assignment(cls: type, attr: str) -> str | None:
    """``path:line  code`` of the first ``self.<attr> = ...`` in the class or a base (by its MRO)."""
    for klass in getattr(cls, "__mro__", ()):
        if klass.__module__ in ("builtins",) or klass.__module__.startswith("torch."):
            continue
        try:
            path = inspect.getsourcefile(klass)
            lines, start = inspect.getsourcelines(klass)
        except (OSError, TypeError):
            continue
        if not path:
            continue
        try:
            tree = ast.parse(textwrap.dedent("".join(lines)))
        except (SyntaxError, ValueError, RecursionError):
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign | ast.AnnAssign):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                       and t.value.id == "self" for t in targets):
                    line = start + n.lineno - 1
                    return f"{_short(path)}:{line}  {linecache.getline(path, line).strip()}"
    return None


def _attribute_store(attr: str, frame: FrameType, *, outside_init: bool) -> str | None:
    """The last ``<x>.<attr> = ...`` outside an ``__init__`` in the files of the program's frames,
    innermost-file last: where a layer was put into a model already moved."""
    seen = []
    f: FrameType | None = frame
    while f is not None:
        path = f.f_code.co_filename
        if path not in seen and not any(part in path.replace("\\", "/") for part in _INTERNAL):
            seen.append(path)
        f = f.f_back
    for path in seen:
        src = _source(path)
        if src is None:
            continue
        found = None
        for n in ast.walk(src.tree):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Attribute) and t.attr == attr and not (
                            outside_init and _in_init(src, n)):
                        found = n if found is None or n.lineno > found.lineno else found
        if found is not None:
            return f"{_short(path)}:{found.lineno}  {src.lines[found.lineno - 1].strip()}"
    return None


def _in_init(src: SourceFile, node: ast.AST) -> bool:
    for fn in src.function_nodes:
        if fn.name == "__init__" and fn.lineno <= node.lineno <= (fn.end_lineno or fn.lineno):
            return True
    return False


def _rank_diagnosis(exc: BaseException) -> dict | None:
    """A rank of torch.multiprocessing.spawn failed: the diagnosis it left (it held the frames)."""
    pid = getattr(exc, "error_pid", None)
    folder = os.environ.get("SAMEDEVICE_RANK_DIAGNOSES")
    if not isinstance(pid, int) or not folder:
        return None
    own = os.path.join(folder, f"{pid}.json")
    where = f"process {getattr(exc, 'error_index', '?')} of torch.multiprocessing.spawn"
    if not os.path.exists(own):
        # the reported rank died of another's error (gloo's "Connection closed by peer" after
        # the rank with the device error exited): that rank left its diagnosis first
        try:
            others = sorted((e for e in os.scandir(folder) if e.name.endswith(".json")),
                            key=lambda e: e.stat().st_mtime)
        except OSError:
            return None
        if not others:
            return None
        own = others[0].path
        where = f"another process of torch.multiprocessing.spawn, pid {others[0].name[:-5]}"
    try:
        with open(own, encoding="utf-8") as f:
            found = json.load(f)
    except (OSError, ValueError):
        return None
    found["process"] = where
    return found


def render(d: dict, *, docs: bool = True) -> str:
    where = f" ({d['process']})" if d.get("process") else ""
    out = [f"samedevice: {d['template']} {d['template_title']}",
           f"  at {d['path']}:{d['line']} in {d['function']}{where}: {d['statement']}"]
    for o in d["operands"]:
        out.append(f"    {o['expr']:<32} {o['device']:<10} ({o['role']})")
    c = d["culprit"]
    if c is not None:
        out.append(f"  culprit: {c['expr']}, made at {c['made_at']}")
        out.append(f"  why: {c['why']}")
        out.append(f"  fix: {c['fix']}")
    else:
        out.append(f"  still open: {d['open']}")
    if d["family"]:
        line = f"  family: {d['family']} {d['family_title']}"
        if docs:
            from samedevice.docs_url import page_url

            line += f"  {page_url(d['family_page'])}"
        out.append(line)
    return "\n".join(out) + "\n"


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except RecursionError:
        return "<expression>"


def _short(path: str) -> str:
    norm = library_path(path)
    if norm != path.replace("\\", "/"):
        return norm
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return norm
    return rel if not rel.startswith("..") else norm


def print_diagnosis(exc: BaseException, json_path: str | None = None) -> None:
    """After the traceback, on stderr; and, for a tool reading it, as JSON into ``json_path``."""
    try:
        found = _rank_diagnosis(exc) or diagnosis_of(exc)
    except Exception as e:  # the diagnosis must never hide the user's own error
        sys.stderr.write(f"samedevice: no diagnosis ({type(e).__name__}: {e})\n")
        return
    if found is None:
        return
    sys.stderr.write(render(found))
    sys.stderr.flush()
    if json_path:
        try:
            with open(json_path, "w", encoding="utf-8") as f:
                json.dump(found, f, indent=2)
        except OSError as e:
            sys.stderr.write(f"samedevice: could not write the diagnosis to {json_path} ({e.strerror or e})\n")
