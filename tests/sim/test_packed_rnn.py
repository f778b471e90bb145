"""Packed-sequence RNNs check their hidden state as cuDNN does (``check_attributes``).

ATen's generic packed path has no device check and would fail later in a matmul with another
text; on CUDA a floating input goes to ``_cudnn_rnn``, which checks hidden states first.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence


def packed(device: torch.device) -> torch.nn.utils.rnn.PackedSequence:
    torch.manual_seed(0)
    x = torch.randn(3, 5, 4, device=device)
    return pack_padded_sequence(x, torch.tensor([5, 3, 2]), batch_first=True)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
def test_cpu_hidden_state_names_the_hidden_tensor(cuda, cls):
    rnn = cls(4, 6).to(cuda)
    h0 = torch.zeros(1, 3, 6)
    hx = (h0, h0.clone()) if cls is nn.LSTM else h0
    with pytest.raises(RuntimeError) as info:
        rnn(packed(cuda), hx)
    assert str(info.value) == (
        "Input and hidden tensors are not at the same device, "
        "found input tensor at cuda:0 and hidden tensor at cpu"
    )


def test_cpu_weights_name_the_parameter_tensor(cuda):
    rnn = nn.GRU(4, 6)  # never moved
    with pytest.raises(RuntimeError) as info:
        rnn(packed(cuda), torch.zeros(1, 3, 6, device=cuda))
    assert str(info.value) == (
        "Input and parameter tensors are not at the same device, "
        "found input tensor at cuda:0 and parameter tensor at cpu"
    )


def test_matching_devices_train_like_the_cpu(cuda):
    results = []
    for device in (torch.device("cpu"), cuda):
        torch.manual_seed(1)
        rnn = nn.LSTM(4, 6).to(device)
        h0 = torch.zeros(1, 3, 6, device=device)
        out, _ = rnn(packed(device), (h0, h0))
        out.data.sum().backward()
        results.append((out.data.cpu(), rnn.weight_ih_l0.grad.cpu()))
    torch.testing.assert_close(results[0], results[1])
