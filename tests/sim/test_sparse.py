"""Sparse tensors (COO and CSR) on the simulated GPU compute what the CPU computes, and a sparse
operand on the wrong device raises the text of CUDA's own sparse kernels
(``aten/src/ATen/native/sparse/cuda/SparseCUDATensorMath.cu``, ``SparseCsrTensorMath.cu``)."""

from __future__ import annotations

import pytest
import torch

from samedevice.sim import _sparse

SAME = "Expected all tensors to be on the same device"


@pytest.fixture
def pair():
    torch.manual_seed(0)
    dense = torch.randn(5, 5)
    dense[dense < 0.4] = 0
    return dense.to_sparse(), torch.randn(5, 3)


def _dense(t: torch.Tensor) -> torch.Tensor:
    return (t.to_dense() if t.layout != torch.strided else t).cpu()


def test_coo_and_csr_tensors_move_to_the_gpu_and_back(cuda, pair):
    s, _ = pair
    g = s.to(cuda)
    assert (g.device, g.layout, g.indices().device, g.values().device) == (
        torch.device("cuda", 0), torch.sparse_coo, torch.device("cuda", 0), torch.device("cuda", 0))
    assert g._nnz() == s._nnz() and g.is_coalesced()
    torch.testing.assert_close(g.cpu().to_dense(), s.to_dense(), rtol=0, atol=0)
    c = s.to_sparse_csr().cuda()
    assert (c.layout, str(c.device), str(c.crow_indices().device), str(c.col_indices().device)) == (
        torch.sparse_csr, "cuda:0", "cuda:0", "cuda:0")
    torch.testing.assert_close(c.to_dense().cpu(), s.to_dense(), rtol=0, atol=0)


@pytest.mark.parametrize("name, compute", [
    ("sparse.mm", lambda s, d: torch.sparse.mm(s, d)),
    ("matmul", lambda s, d: s @ d),
    ("addmm", lambda s, d: torch.addmm(torch.ones(5, 3, device=d.device), s, d)),
    ("add", lambda s, d: s + s),
    ("dense + sparse", lambda s, d: torch.ones(5, 5, device=d.device) + s),
    ("mul by a number", lambda s, d: s * 2),
    ("sparse * sparse", lambda s, d: s * s),
    ("coalesce", lambda s, d: (s + s).coalesce()),
    ("transpose", lambda s, d: s.t()),
    ("sparse.sum over a dim", lambda s, d: torch.sparse.sum(s, dim=1)),
    ("csr @ dense", lambda s, d: s.to_sparse_csr() @ d),
    ("to_sparse of a GPU tensor", lambda s, d: d.to_sparse()),
    ("in-place mul_", lambda s, d: s.clone().mul_(3)),
])
def test_sparse_ops_on_the_gpu_compute_the_cpus_values(cuda, pair, name, compute):
    s, d = pair
    on_gpu = compute(s.to(cuda), d.to(cuda))
    assert on_gpu.device == torch.device("cuda", 0), name
    torch.testing.assert_close(_dense(on_gpu), _dense(compute(s, d)), rtol=0, atol=0)


def test_gradients_flow_through_a_sparse_matmul(cuda, pair):
    s, d = pair
    x = d.to(cuda).requires_grad_()
    torch.sparse.mm(s.to(cuda), x).relu().sum().backward()
    want = d.clone().requires_grad_()
    torch.sparse.mm(s, want).relu().sum().backward()
    torch.testing.assert_close(x.grad.cpu(), want.grad, rtol=0, atol=0)


@pytest.mark.parametrize("name, compute, message", [
    # _sparse_mm makes its zeros on mat2's device, so a CPU mat2 is first reported as 'self'
    ("sparse.mm(gpu, cpu)", lambda gs, s, gd, d: torch.sparse.mm(gs, d),
     f"{SAME}. addmm: expected 'self' to be CUDA, but got CPU"),
    ("cpu @ gpu", lambda gs, s, gd, d: s @ gd, f"{SAME}. addmm: expected 'mat1' to be CUDA, but got CPU"),
    ("addmm with a CPU mat2", lambda gs, s, gd, d: torch.addmm(torch.ones(5, 3, device=gd.device), gs, d),
     f"{SAME}. addmm: expected 'mat2' to be CUDA, but got CPU"),
    ("cpu dense + gpu sparse", lambda gs, s, gd, d: torch.ones(5, 5) + gs,
     "add: expected 'self' to be a CUDA tensor, but got a CPU tensor"),
    ("gpu sparse + cpu sparse", lambda gs, s, gd, d: gs + s, "add: expected 'other' to be CUDA, but got CPU"),
    ("gpu sparse * cpu sparse", lambda gs, s, gd, d: gs * s, "mul: expected 'other' to be CUDA, but got CPU"),
])
def test_a_sparse_operand_on_the_wrong_device_raises_cudas_sparse_kernel_text(cuda, pair, name, compute, message):
    s, d = pair
    with pytest.raises(RuntimeError) as raised:
        compute(s.to(cuda), s, d.to(cuda), d)
    assert str(raised.value) == message, name


def test_a_csr_operand_on_the_wrong_device_raises_the_compressed_kernels_text(cuda, pair):
    s, d = pair
    with pytest.raises(RuntimeError) as raised:
        s.to_sparse_csr() @ d.to(cuda)
    # addmm_out_sparse_compressed_cuda's _check_is_cuda (which operand comes first depends on
    # where this torch's _sparse_csr_mm makes its zeros)
    assert str(raised.value) in {
        f"{SAME}. addmm expected '{name}' to be CUDA tensor, but got cpu tensor" for name in ("self", "mat1")}


def test_every_shadowed_sparse_operator_is_listed():
    """An operator with a composite kernel and its own CPU sparse kernel must get the simulated
    device's sparse kernel too, or the composite takes it (and raises or decomposes)."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    missing = sorted(
        n[6:] for n in torch._C._dispatch_get_all_op_names()
        if n.startswith("aten::")
        and (has(n, "SparseCPU") or has(n, "SparseCsrCPU"))
        and (has(n, "CompositeExplicitAutograd") or has(n, "CompositeExplicitAutogradNonFunctional"))
        and n[6:] not in _sparse._SHADOWED)
    assert missing == []
