"""Sparse tensors (COO and the compressed layouts: CSR, CSC, BSR, BSC) on the simulated GPU.

A sparse tensor is an impl that holds dense index and value tensors. On the simulated device
those are ``sim`` tensors, so a sparse ``sim`` tensor needs two kinds of kernel at the
``SparsePrivateUse1`` and ``SparseCsrPrivateUse1`` keys:

* **structure** (build one, read its indices, values and nnz, resize it, copy one into another):
  the CPU's own sparse kernels, redispatched to ``SparseCPU``/``SparseCsrCPU``. They only touch
  the impl or call dense operators on its parts, which land on the simulated device;
* **compute** (everything else): CUDA's device check, then the CPU kernel on CPU views of the
  same memory, then the results handed back as ``sim`` tensors -- what ``_kernel.run`` does for
  dense tensors.

CUDA's sparse kernels check devices themselves, each with its own text
(``aten/src/ATen/native/sparse/cuda/SparseCUDATensorMath.cu``): :data:`_KERNEL_CHECKS` repeats
those; every other operator gets TensorIterator's rule, which is where CUDA's dense parts of a
sparse kernel fail.
"""

from __future__ import annotations

from typing import Any

import torch

from . import _checks
from ._plumbing import from_cpu, to_cpu

Tensor = torch.Tensor
_K = torch._C.DispatchKey
_COO_CPU = torch._C.DispatchKeySet(_K.SparseCPU)
_COMPRESSED_CPU = torch._C.DispatchKeySet(_K.SparseCsrCPU)
_COMPRESSED = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)
aten = torch.ops.aten

# Operators whose CPU sparse kernel only reads or rewrites the impl, or composes other operators
# (``mm`` is ``_sparse_mm`` or ``_sparse_csr_mm``, the same device-generic code on CPU and CUDA:
# zeros on one operand's device, then ``addmm``, whose device check is CUDA's below).
_STRUCTURE = frozenset({
    "_sparse_coo_tensor_with_dims", "_sparse_coo_tensor_with_dims_and_tensors",
    "_indices", "_values", "indices", "values", "_nnz", "sparse_dim", "dense_dim",
    "_dimI", "_dimV", "is_coalesced", "_coalesced_", "sparse_resize_",
    "sparse_resize_and_clear_", "copy_sparse_to_sparse_", "empty", "empty_like",
    "resize_as_sparse_", "crow_indices", "col_indices", "ccol_indices", "row_indices",
    "is_pinned", "mm", "alias", "detach", "_to_copy", "clone",
})


# -- CUDA's own checks in its sparse kernels ------------------------------------------------------


def _cuda_names(pairs: list[tuple[str, Any]]) -> str | None:
    """The first of ``(name, value)`` that is a tensor on the CPU, or None."""
    for name, value in pairs:
        if isinstance(value, Tensor) and value.device.type == "cpu":
            return name
    return None


def _args(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, Any]:
    return {**{a.name: v for a, v in zip(op._schema.arguments, args, strict=False)}, **kwargs}


def _check_addmm(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> None:
    """``s_addmm_out_sparse_dense_cuda``: self (the added matrix), out, mat1, mat2, in order;
    for a compressed operand ``addmm_out_sparse_compressed_cuda``'s ``_check_is_cuda``: self,
    mat1, mat2, result."""
    a = _args(op, args, kwargs)
    if any(isinstance(a.get(k), Tensor) and a[k].layout in _COMPRESSED for k in ("self", "mat1", "mat2")):
        for name, key in (("self", "self"), ("mat1", "mat1"), ("mat2", "mat2"), ("result", "out")):
            t = a.get(key)
            if isinstance(t, Tensor) and t.device.type == "cpu":
                raise RuntimeError(f"{_checks.SAME_DEVICE}. addmm expected '{name}' to be CUDA tensor, "
                                   "but got cpu tensor")
        return
    name = _cuda_names([("self", a.get("self")), ("out", a.get("out")),
                        ("mat1", a.get("mat1")), ("mat2", a.get("mat2"))])
    if name:
        raise RuntimeError(f"{_checks.SAME_DEVICE}. addmm: expected '{name}' to be CUDA, but got CPU")


def _check_add(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> None:
    """``add_out_sparse_cuda`` and, for a dense self, ``add_out_dense_sparse_cuda``."""
    a = _args(op, args, kwargs)
    self_, other, out = a.get("self"), a.get("other"), a.get("out")
    if not isinstance(other, Tensor):
        return
    pairs = [("self", self_), ("other", other), ("out", out)]
    if isinstance(self_, Tensor) and not self_.is_sparse:
        name = _cuda_names(pairs)
        if name:
            raise RuntimeError(f"add: expected '{name}' to be a CUDA tensor, but got a CPU tensor")
        return
    if not other.is_sparse:
        return  # "add(sparse, dense) is not supported": the CPU kernel says so too
    name = _cuda_names(pairs)
    if name:
        raise RuntimeError(f"add: expected '{name}' to be CUDA, but got CPU")


def _check_mul(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> None:
    """``mul_out_sparse_cuda``: out first; sparse * sparse then checks self and other."""
    a = _args(op, args, kwargs)
    self_, other, out = a.get("self"), a.get("other"), a.get("out")
    if _cuda_names([("out", out)]):
        raise RuntimeError("mul: expected 'out' to be CUDA, but got CPU")
    if isinstance(self_, Tensor) and isinstance(other, Tensor) and self_.is_sparse and other.is_sparse \
            and self_.dim() and other.dim():
        name = _cuda_names([("self", self_), ("other", other)])
        if name:
            raise RuntimeError(f"mul: expected '{name}' to be CUDA, but got CPU")
    else:
        _check_iter(args, kwargs)


def _check_hspmm(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> None:
    a = _args(op, args, kwargs)
    name = _cuda_names([("self", a.get("self")), ("out", a.get("out")), ("mat2", a.get("mat2"))])
    if name:
        raise RuntimeError(f"hspmm: expected '{name}' to be CUDA, but got CPU")


_KERNEL_CHECKS = {
    "addmm": _check_addmm, "addmm_": _check_addmm, "_sparse_addmm": _check_addmm,
    "add": _check_add, "add_": _check_add,
    "mul": _check_mul, "mul_": _check_mul,
    "hspmm": _check_hspmm,
}


def _tensors(values: Any) -> list[Tensor]:
    found: list[Tensor] = []
    for v in values:
        if isinstance(v, Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(x for x in v if isinstance(x, Tensor))
    return found


def _check_iter(args: tuple, kwargs: dict) -> None:
    __tracebackhide__ = True
    _checks.check_iter([(t, False) for t in _tensors((*args, *kwargs.values()))])


# -- moving between the simulated device and the CPU ----------------------------------------------


def _structure(op: torch._ops.OpOverload, t: Tensor) -> Any:
    keys = _COMPRESSED_CPU if t.layout in _COMPRESSED else _COO_CPU
    return op._handle.redispatch_boxed(keys, t)


def _sparse_to_cpu(t: Tensor) -> Tensor:
    """A CPU sparse tensor over the same index and value memory as the sim sparse tensor ``t``."""
    values = to_cpu(_structure(aten.values.default, t) if t.layout in _COMPRESSED
                    else _structure(aten._values.default, t))
    if t.layout == torch.sparse_coo:
        indices = to_cpu(_structure(aten._indices.default, t))
        return torch.sparse_coo_tensor(indices, values, t.shape, is_coalesced=_structure(
            aten.is_coalesced.default, t), check_invariants=False)
    if t.layout in (torch.sparse_csr, torch.sparse_bsr):
        compressed, plain = aten.crow_indices.default, aten.col_indices.default
    else:
        compressed, plain = aten.ccol_indices.default, aten.row_indices.default
    return torch.sparse_compressed_tensor(
        to_cpu(_structure(compressed, t)), to_cpu(_structure(plain, t)), values, t.shape,
        layout=t.layout, check_invariants=False)


def _to_cpu(v: Any) -> Any:
    if isinstance(v, Tensor):
        if v.get_device() < 0 or v.is_cuda:
            return v
        return _sparse_to_cpu(v) if v.layout != torch.strided else to_cpu(v)
    if isinstance(v, (list, tuple)):
        return type(v)(_to_cpu(x) for x in v)
    return v


def sparse_from_cpu(c: Tensor, index: int) -> Tensor:
    device = torch.device("sim", index)
    if c.layout == torch.sparse_coo:
        return aten._sparse_coo_tensor_with_dims_and_tensors(
            c.sparse_dim(), c.dense_dim(), c.shape, from_cpu(c._indices(), index),
            from_cpu(c._values(), index), dtype=c.dtype, layout=c.layout, device=device,
            is_coalesced=c.is_coalesced())
    if c.layout in (torch.sparse_csr, torch.sparse_bsr):
        compressed, plain = c.crow_indices(), c.col_indices()
    else:
        compressed, plain = c.ccol_indices(), c.row_indices()
    return torch.sparse_compressed_tensor(
        from_cpu(compressed, index), from_cpu(plain, index), from_cpu(c.values(), index),
        c.shape, dtype=c.dtype, layout=c.layout, device=device, check_invariants=False)


def _back(value: Any, index: int, cpu_args: list[tuple[Tensor, Tensor]]) -> Any:
    if isinstance(value, Tensor):
        for cpu, sim in cpu_args:  # an argument the op wrote into, or returned
            if value is cpu:
                if sim.layout != torch.strided:
                    _write_back(sim, cpu)
                return sim
        if value.device.type != "cpu":
            return value
        return from_cpu(value, index) if value.layout == torch.strided else sparse_from_cpu(value, index)
    if isinstance(value, (list, tuple)):
        return type(value)(_back(v, index, cpu_args) for v in value)
    return value


def _write_back(sim: Tensor, cpu: Tensor) -> None:
    """An in-place op may have given the CPU sparse tensor new index or value tensors."""
    if sim.layout == torch.sparse_coo:
        aten.copy_sparse_to_sparse_.default._handle.redispatch_boxed(_COO_CPU, sim, cpu)
    else:
        aten.copy_.default._handle.redispatch_boxed(_COMPRESSED_CPU, sim, cpu)


# -- the kernel -----------------------------------------------------------------------------------


def _base_name(op: torch._ops.OpOverload) -> str:
    return op._schema.name.removeprefix("aten::")


def kernel(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """Every operator at the simulated device's sparse keys."""
    __tracebackhide__ = True
    with torch._C.DisableTorchFunction():
        return _kernel(op, args, kwargs)


def _kernel(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    __tracebackhide__ = True
    name = _base_name(op)
    tensors = _tensors((*args, *kwargs.values()))
    compressed = any(t.layout in _COMPRESSED for t in tensors) or kwargs.get("layout") in _COMPRESSED
    if name in _STRUCTURE:
        return op._handle.redispatch_boxed(_COMPRESSED_CPU if compressed else _COO_CPU, *args, **kwargs)
    if any(t.device.type == "cpu" for t in tensors):
        check = _KERNEL_CHECKS.get(name)
        if check is not None:
            check(op, args, kwargs)
        else:
            _check_iter(args, kwargs)
    index = next((t.get_device() for t in tensors if t.get_device() >= 0 and not t.is_cuda), 0)
    cpu_args: list[tuple[Tensor, Tensor]] = []
    cargs = []
    for a in args:
        c = _to_cpu(a)
        if isinstance(a, Tensor) and c is not a:
            cpu_args.append((c, a))
        cargs.append(c)
    ckwargs = {}
    for k, a in kwargs.items():
        c = _to_cpu(a)
        if isinstance(a, Tensor) and c is not a:
            cpu_args.append((c, a))
        ckwargs[k] = c
    if isinstance(ckwargs.get("device"), torch.device) and ckwargs["device"].type == "sim":
        ckwargs["device"] = torch.device("cpu")
    return _back(op._op(*cargs, **ckwargs), index, cpu_args)


# -- registration ---------------------------------------------------------------------------------

# Operators with a composite kernel *and* their own SparseCPU/SparseCsrCPU kernel (torch
# 2.13-2.15, listed with ``torch._C._dispatch_has_kernel_for_dispatch_key``; the test
# ``test_every_shadowed_sparse_operator_is_listed`` asks this torch). A backend fallback ranks
# below a composite kernel, so the simulated device registers :func:`kernel` for each, as the CPU
# and CUDA builds register theirs. Asking the dispatcher at start-up would cost 50 ms.
_SHADOWED = (
    # CompositeExplicitAutograd: the accessors' defaults raise; the rest would decompose
    "is_coalesced", "indices", "values", "sparse_dim", "dense_dim", "crow_indices", "col_indices",
    "ccol_indices", "row_indices", "is_pinned", "_pin_memory", "copy_", "clone", "empty_like",
    "zeros.out", "sum", "mv", "permute", "unsqueeze", "select.int", "abs", "abs_", "isinf",
    "nan_to_num", "nan_to_num_", "deg2rad", "deg2rad_", "deg2rad.out", "rad2deg", "rad2deg_",
    "rad2deg.out", "_conj_physical", "conj_physical_", "mul.Scalar", "mul_.Scalar",
    # CompositeExplicitAutogradNonFunctional (structured ops): empty + the out= kernel, whose
    # empty would take the sparse input's layout where CUDA's kernel returns a strided tensor
    "add.Tensor", "add_.Tensor", "addmm", "addmm_", "any", "asin", "asin_", "asinh", "asinh_",
    "atan", "atan_", "atanh", "atanh_", "bmm", "cat", "ceil", "ceil_", "div.Tensor",
    "div.Tensor_mode", "div_.Tensor", "div_.Tensor_mode", "erf", "erf_", "erfinv", "erfinv_",
    "expm1", "expm1_", "floor", "floor_", "frac", "frac_", "isneginf", "isposinf",
    "linalg_vector_norm", "log1p", "log1p_", "mm", "mul.Tensor", "mul_.Tensor", "narrow_copy",
    "neg", "neg_", "norm.ScalarOpt_dim", "norm.ScalarOpt_dim_dtype", "pow.Tensor_Scalar", "round",
    "round_", "select_copy.int", "sgn", "sgn_", "sign", "sign_", "signbit", "sin", "sin_", "sinh",
    "sinh_", "sqrt", "sqrt_", "sub.Tensor", "sub_.Tensor", "sum.dim_IntList", "tan", "tan_",
    "tanh", "tanh_", "threshold_backward", "trunc", "trunc_",
)

_libraries: list[torch.library.Library] = []  # kept alive: dropping them unregisters kernels


def register(fallbacks: torch.library.Library) -> None:
    """Route the simulated device's sparse keys to :func:`kernel`."""
    fallbacks.fallback(kernel, "SparsePrivateUse1")
    fallbacks.fallback(kernel, "SparseCsrPrivateUse1")
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    lib = torch.library.Library("aten", "IMPL")
    for name in _SHADOWED:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(aten, packet), overload or "default", None)
        if op is None:
            continue
        for cpu_key, sim_key in (("SparseCPU", "SparsePrivateUse1"), ("SparseCsrCPU", "SparseCsrPrivateUse1")):
            if has(f"aten::{name}", cpu_key) and not has(f"aten::{name}", sim_key):
                lib.impl(name, _bound(op), sim_key)
    _libraries.append(lib)


def _bound(op: torch._ops.OpOverload) -> Any:
    def kernel_for_op(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return kernel(op, *args, **kwargs)

    return kernel_for_op
