"""CUDA's kernel-side device checks, under the "cuda" alias, with their exact text.

Each test is one ``TORCH_CHECK`` on ``device()`` that a CUDA kernel makes before any
TensorIterator (see ``samedevice.sim._checks.KERNEL_CHECKS`` for the sources).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from samedevice.sim import _checks


def _raises(fn, text: str) -> None:
    with pytest.raises(RuntimeError) as info:
        fn()
    assert str(info.value) == text


def test_every_table_entry_is_an_aten_overload():
    for name in _checks.KERNEL_CHECKS:
        packet, _, overload = name.partition(".")
        assert hasattr(getattr(torch.ops.aten, packet), overload or "default"), name


class CausalSelfAttention(nn.Module):
    """The classic bug: the mask is a plain attribute, so ``.to("cuda")`` leaves it on the CPU."""

    def __init__(self, n: int, d: int, as_buffer: bool) -> None:
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        if as_buffer:
            self.register_buffer("mask", mask)
        else:
            self.mask = mask

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, -1)
        scores = (q @ k.transpose(-2, -1)).masked_fill(self.mask, float("-inf"))
        return scores.softmax(-1) @ v


def test_causal_mask_left_on_the_cpu(cuda):
    x = torch.randn(2, 4, 8, device=cuda)
    _raises(lambda: CausalSelfAttention(4, 8, as_buffer=False).to(cuda)(x),
            "expected self and mask to be on the same device, but got mask on cpu and self on cuda:0")
    CausalSelfAttention(4, 8, as_buffer=True).to(cuda)(x)  # the fix: a registered buffer


def test_masked_fill_rejects_a_0_dim_cpu_mask(cuda):
    x = torch.randn(3, device=cuda)
    _raises(lambda: x.masked_fill(torch.tensor(True), 0.0),
            "expected self and mask to be on the same device, but got mask on cpu and self on cuda:0")
    _raises(lambda: torch.randn(3).masked_fill_(torch.ones(3, dtype=torch.bool, device=cuda), 0.0),
            "expected self and mask to be on the same device, but got mask on cuda:0 and self on cpu")


def test_masked_fill_value_tensor(cuda):
    x, m = torch.randn(3, device=cuda), torch.ones(3, dtype=torch.bool, device=cuda)
    assert x.masked_fill(m, torch.tensor(2.0)).tolist() == [2.0, 2.0, 2.0]  # 0-dim CPU value: read
    _raises(lambda: torch.randn(3).masked_fill_(m.cpu(), torch.tensor(2.0, device=cuda)),
            "masked_fill_: Expected inputs to be on same device")


def test_index_put_accumulate_wants_the_value_on_the_device(cuda):
    x, i = torch.zeros(4, 2, device=cuda), torch.tensor([0, 0], device=cuda)
    _raises(lambda: x.index_put_((i,), torch.ones(2, 2), accumulate=True),
            "expected device cuda:0 but got device cpu for value tensor")
    x.index_put_((i,), torch.tensor(1.0), accumulate=True)  # 0-dim: moved to the device first
    assert x[0].tolist() == [2.0, 2.0]
    _raises(lambda: x.index_put_((i,), torch.ones(2, 2)),  # no accumulate: a TensorIterator
            "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")


def test_boolean_mask_assignment_of_one_cpu_element(cuda):
    x = torch.zeros(3, device=cuda)
    x[x == 0] = torch.tensor([5.0])  # canDispatchToMaskedFill: becomes masked_fill_
    assert x.tolist() == [5.0, 5.0, 5.0]


def test_fill_reads_a_0_dim_value_from_either_side(cuda):
    assert torch.zeros(2).fill_(torch.tensor(3.0, device=cuda)).tolist() == [3.0, 3.0]
    assert torch.zeros(2, device=cuda).fill_(torch.tensor(3.0)).tolist() == [3.0, 3.0]


def test_index_fill_rejects_a_0_dim_cpu_index(cuda):
    _raises(lambda: torch.zeros(3, device=cuda).index_fill(0, torch.tensor(1), 1.0),
            "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")


def test_searchsorted_sorter_on_the_cpu(cuda):
    b = torch.tensor([3.0, 1.0, 2.0], device=cuda)
    _raises(lambda: torch.searchsorted(b, torch.ones(2, device=cuda), sorter=torch.argsort(b.cpu())),
            "torch.searchsorted(): sorter and boundary tensors should have same device type, "
            "but got sorter tensor device type cpu and input value tensor device type cuda:0")


def test_sdpa_query_key_value_on_different_devices(cuda):
    q = torch.randn(1, 2, 4, 8, device=cuda)
    _raises(lambda: nn.functional.scaled_dot_product_attention(q, q.cpu(), q),
            "Expected query, key, and value to have the same device type, but got query.device: "
            "cuda:0 key.device: cpu and value.device: cuda:0 instead.")
