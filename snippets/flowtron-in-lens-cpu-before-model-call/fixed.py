"""NVIDIA Flowtron after commit eb226b1 (2020-12-07), reduced: the lengths stay on the GPU with
the batch, and only the copy handed to `pack_padded_sequence` goes to the CPU,
`pack_padded_sequence(x, in_lens.cpu(), batch_first=True)`. `get_mask_from_lengths` gets the
GPU lengths and builds the mask on the GPU (as a `bool` mask, also from eb226b1).

Upstream: https://github.com/NVIDIA/flowtron/issues/86; the fix is commit
https://github.com/NVIDIA/flowtron/commit/eb226b1c3719c2d21702bfab6a8dd77401d93302
"""

import torch
from torch import nn
from torch.nn import functional as F


def get_mask_from_lengths(lengths):
    """Constructs binary mask from a 1D torch tensor of input lengths"""
    max_len = torch.max(lengths).item()
    ids = torch.arange(0, max_len, out=torch.cuda.LongTensor(max_len))
    mask = (ids < lengths.unsqueeze(1)).bool()
    return mask


class Encoder(nn.Module):
    """flowtron.py Encoder: a convolution bank, then a bidirectional LSTM over packed sequences."""

    def __init__(self, encoder_embedding_dim=16, encoder_kernel_size=5):
        super().__init__()
        self.convolutions = nn.ModuleList([nn.Sequential(
            nn.Conv1d(encoder_embedding_dim, encoder_embedding_dim, encoder_kernel_size,
                      padding=(encoder_kernel_size - 1) // 2),
            nn.BatchNorm1d(encoder_embedding_dim))])
        self.lstm = nn.LSTM(encoder_embedding_dim, encoder_embedding_dim // 2, 1,
                            batch_first=True, bidirectional=True)

    def forward(self, x, in_lens):
        x_embedded = []
        for b_ind in range(x.size()[0]):
            curr_x = x[b_ind:b_ind+1, :, :in_lens[b_ind]].clone()
            for conv in self.convolutions:
                curr_x = F.dropout(F.relu(conv(curr_x)), 0.5, self.training)
            x_embedded.append(curr_x[0].transpose(0, 1))
        x = torch.nn.utils.rnn.pad_sequence(x_embedded, batch_first=True)
        x = nn.utils.rnn.pack_padded_sequence(x, in_lens.cpu(), batch_first=True)

        self.lstm.flatten_parameters()
        outputs, _ = self.lstm(x)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)
        return outputs


class AR_Step(nn.Module):
    """One affine flow step, shrunk: attention over the text, then a scale and shift."""

    def __init__(self, n_mel_channels, n_attn_channels, n_hidden):
        super().__init__()
        self.query = nn.Linear(n_mel_channels, n_hidden)
        self.key = nn.Linear(n_attn_channels, n_hidden)
        self.value = nn.Linear(n_attn_channels, n_hidden)
        self.conv = nn.Linear(n_mel_channels + n_hidden, 2 * n_mel_channels)

    def forward(self, mel, text, mask, out_lens):
        scores = torch.bmm(self.query(mel).permute(1, 0, 2), self.key(text).permute(1, 2, 0))
        scores = scores.masked_fill(mask.transpose(1, 2), -float("inf"))
        attn = torch.softmax(scores, dim=2)
        context = torch.bmm(attn, self.value(text).permute(1, 0, 2)).permute(1, 0, 2)
        log_s, b = self.conv(torch.cat([mel, context], 2)).chunk(2, dim=2)
        mel = torch.exp(log_s) * mel + b
        return mel, log_s, None, attn


class Flowtron(nn.Module):
    def __init__(self, n_speakers=2, n_speaker_dim=4, n_text=20, n_text_dim=16, n_mel_channels=8,
                 n_hidden=16, n_flows=2):
        super().__init__()
        self.speaker_embedding = nn.Embedding(n_speakers, n_speaker_dim)
        self.embedding = nn.Embedding(n_text, n_text_dim)
        self.encoder = Encoder(n_text_dim)
        self.flows = nn.ModuleList(
            [AR_Step(n_mel_channels, n_text_dim + n_speaker_dim, n_hidden) for _ in range(n_flows)])

    def forward(self, mel, speaker_vecs, text, in_lens, out_lens):
        speaker_vecs = self.speaker_embedding(speaker_vecs)
        text = self.embedding(text).transpose(1, 2)
        text = self.encoder(text, in_lens)

        text = text.transpose(0, 1)
        mel = mel.permute(2, 0, 1)
        encoder_outputs = torch.cat([text, speaker_vecs.expand(text.size(0), -1, -1)], 2)
        log_s_list = []
        mask = ~get_mask_from_lengths(in_lens)[..., None]
        for flow in self.flows:
            mel, log_s, gate, attn = flow(mel, encoder_outputs, mask, out_lens)
            log_s_list.append(log_s)
        return mel, log_s_list


def flowtron_loss(z, log_s_list, sigma=1.0):
    log_s_total = sum(log_s.sum() for log_s in log_s_list)
    loss = torch.sum(z * z) / (2 * sigma * sigma) - log_s_total
    return loss / (z.size(0) * z.size(1) * z.size(2))


torch.manual_seed(0)
model = Flowtron().cuda()
model.eval()  # no dropout or batch statistics: a reproducible single step
# cuDNN runs an RNN's backward only in training mode (real CUDA: "cudnn RNN backward can only
# be called in training mode"); the one-layer LSTM has no dropout, so this changes no number
model.encoder.lstm.train()

# one batch from TextMelCollate: sorted by text length, longest first
text = torch.randint(1, 20, (2, 7))
in_lens = torch.tensor([7, 5])
mel = torch.randn(2, 8, 6)
out_lens = torch.tensor([6, 4])
speaker_vecs = torch.tensor([0, 1])

mel, speaker_vecs, text = mel.cuda(), speaker_vecs.cuda(), text.cuda()
in_lens, out_lens = in_lens.cuda(), out_lens.cuda()

z, log_s_list = model(mel, speaker_vecs, text, in_lens, out_lens)
loss = flowtron_loss(z, log_s_list)
loss.backward()
print(f"loss {loss.item():.4f}")
