"""What CUDA's generated code does for each ATen operator, read from ``native_functions.yaml``.

A Python kernel registered at PrivateUse1 gets no device check for free: on CUDA the checks
live in the generated dispatch wrappers. torchgen decides them from three fields of the yaml
that ships inside every torch wheel (``torchgen/packaged/ATen/native/native_functions.yaml``):

* ``dispatch:`` / ``structured_delegate:`` -- whether a CUDA kernel exists at all (no CUDA
  kernel means no wrapper, so the op decomposes and its parts are checked instead);
* ``device_check:`` -- ``ExactSame`` (the default) generates
  ``c10::impl::check_and_update_common_device`` calls over the out arguments and then the
  positional tensor arguments; ``NoCheck`` generates none (TensorIterator ops check inside the
  iterator, a few ops allow mixing on purpose);
* ``structured:`` -- decides the wrapper's symbol name, which the error message prints.

Parsing the 15k-line yaml takes ~40 ms, so the result is cached as JSON per torch build.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

# How the CUDA wrapper checks devices for an op.
EXACT = "exact"  # generated check_and_update_common_device chain (names an argument)
ITER = "iter"  # TensorIterator: "found at least two devices, A and B!"
FOREACH = "foreach"  # mixed devices send CUDA to the per-tensor slow path (TensorIterator rule)
NOCHECK = "none"  # no generated check (copy_, _to_copy, index with CPU indices, ...)


@dataclass(frozen=True, slots=True)
class OpFacts:
    """What torchgen generates for one overload on CUDA."""

    check: str
    has_cuda_kernel: bool
    wrapper: str  # e.g. "wrapper_CUDA_addmm" without the dispatch-key part: "addmm"


_FUNC_RE = re.compile(r"^- func: ([\w.]+)\((.*)\) -> (.*)$")


def _yaml_path() -> Path:
    import torchgen

    return Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"


def _cache_file(yaml_path: Path) -> Path:
    stat = yaml_path.stat()
    key = hashlib.sha1(f"{yaml_path}:{stat.st_size}:{stat.st_mtime_ns}:v3".encode()).hexdigest()[:16]
    from samedevice._atomic import cache_dir

    return Path(cache_dir()) / f"optable-{key}.json"


def _wrapper_suffix(name: str, overload: str, structured: bool, is_out: bool) -> str:
    """torchgen's symbol for the backend wrapper, without the ``wrapper_<KEY>_`` prefix.

    Structured kernels use ``native.name``: ``<name>[_out][_<overload>]``.
    Others use ``wrapper_<KEY>_<overload>_`` + ``cpp.name``: ``<overload>_<name>[_out]``,
    hence the double underscore of ``wrapper_CUDA__index_select``.
    """
    if structured:
        suffix = name + ("_out" if is_out else "")
        return suffix + (f"_{overload}" if overload else "")
    return f"{overload}_{name}" + ("_out" if is_out else "")


def parse_native_functions(text: str) -> dict[str, OpFacts]:
    """Parse the yaml with a line scanner (PyYAML would cost ~1.5 s on this file)."""
    entries: list[dict] = []
    current: dict | None = None
    in_dispatch = False
    for line in text.splitlines():
        m = _FUNC_RE.match(line)
        if m:
            current = {"func": m.group(1), "args": m.group(2), "returns": m.group(3), "keys": set()}
            entries.append(current)
            in_dispatch = False
            continue
        if current is None:
            continue
        stripped = line.strip()
        if line.startswith("  ") and not line.startswith("    "):
            in_dispatch = False
            if stripped.startswith("dispatch:"):
                in_dispatch = True
            elif stripped.startswith("device_check:"):
                current["device_check"] = stripped
            elif stripped.startswith("structured_delegate:"):
                current["delegate"] = stripped.split(":", 1)[1].strip()
            elif stripped.startswith("ufunc_inner_loop:"):
                # ufunc codegen emits the CPU and CUDA kernels; dispatch: does not list them
                current["keys"].update(("CPU", "CUDA"))
            elif stripped.startswith("structured:"):
                current["structured"] = stripped.split(":", 1)[1].strip() == "True"
        elif in_dispatch and line.startswith("    ") and ":" in stripped and not stripped.startswith("#"):
            keys = stripped.split(":", 1)[0]
            current["keys"].update(k.strip() for k in keys.split(","))
    by_name = {e["func"]: e for e in entries}
    facts: dict[str, OpFacts] = {}
    for e in entries:
        full = e["func"]
        name, _, overload = full.partition(".")
        delegate = by_name.get(e.get("delegate", ""))
        has_cuda = "CUDA" in e["keys"] or (delegate is not None and "CUDA" in delegate["keys"])
        structured = bool(e.get("structured")) or delegate is not None
        is_out = "Tensor(" in e["args"] and "*" in e["args"] and _is_out_fn(e["args"])
        dc = e.get("device_check", "")
        if name.startswith("_foreach_"):
            check = FOREACH
        elif "NoCheck" in dc:
            check = ITER if "TensorIterator" in dc else NOCHECK
        else:
            check = EXACT
        facts[full] = OpFacts(check, has_cuda, _wrapper_suffix(name, overload, structured, is_out))
    return facts


def _is_out_fn(args: str) -> bool:
    # An out function has mutable tensors among its keyword-only arguments.
    _, _, kwonly = args.partition("*")
    return bool(re.search(r"Tensor\([a-z]!\)", kwonly))


def load() -> dict[str, OpFacts]:
    """The op table for the installed torch, from the JSON cache when possible."""
    path = _yaml_path()
    cache = _cache_file(path)
    try:
        raw = json.loads(cache.read_text())
        return {k: OpFacts(*v) for k, v in raw.items()}
    except (OSError, ValueError, TypeError):
        pass
    facts = parse_native_functions(path.read_text())
    from samedevice._atomic import write_text

    # a read-only cache folder still works, only slower
    write_text(str(cache), json.dumps({k: [v.check, v.has_cuda_kernel, v.wrapper] for k, v in facts.items()}))
    return facts
