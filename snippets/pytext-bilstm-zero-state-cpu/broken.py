"""PyText `BiLSTM` representation after Phabricator diff D14035841 (February 2019), reduced:
when no initial state is passed, `forward` builds a zero `(h0, c0)` with `torch.zeros(...)`
and no `device=`, so on a GPU the LSTM gets a CUDA input and a CPU hidden state.

Upstream: https://github.com/facebookresearch/pytext/pull/297 ("Fix BiLSTM forward crash
when input embedding is on GPU", D14065899), which quotes the error. The zero state was added
so that `torch.jit` tracing does not bake the batch size in (pytorch/pytorch#16664).
"""

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class BiLSTM(nn.Module):
    """pytext/models/representations/bilstm.py, without the config and ONNX branches."""

    def __init__(self, embed_dim: int, lstm_dim: int = 32, num_layers: int = 1) -> None:
        super().__init__()
        self.num_layers = num_layers
        self.lstm_dim = lstm_dim
        self.dropout = nn.Dropout(0.4)
        self.lstm = nn.LSTM(embed_dim, lstm_dim, num_layers=num_layers, bidirectional=True)

    def forward(self, embedded_tokens, seq_lengths, states=None):
        embedded_tokens = self.dropout(embedded_tokens)
        if states is None:
            # A zero state that matches the batch size, so that tracing does not fix it.
            state = torch.zeros(
                self.num_layers * 2,
                seq_lengths.size(0),  # batch size
                self.lstm_dim,
            )  # no device=: a CPU tensor whatever the input is on
            states = (state, state)
        rnn_input = pack_padded_sequence(embedded_tokens, seq_lengths, batch_first=True)
        rep, new_state = self.lstm(rnn_input, states)
        rep, _ = pad_packed_sequence(rep, batch_first=True, total_length=embedded_tokens.size(1))
        return rep, new_state


torch.manual_seed(0)
device = "cuda"
representation = BiLSTM(embed_dim=8).to(device)
representation.eval()  # no dropout: the CPU and GPU runs draw no random numbers

embedded_tokens = torch.randn(3, 5, 8, device=device)  # batch of 3 sentences, 5 tokens each
seq_lengths = torch.tensor([5, 4, 2])  # lengths stay on the CPU, as pack_padded_sequence wants
rep, (h_n, c_n) = representation(embedded_tokens, seq_lengths)
print(rep.shape, rep.sum())
