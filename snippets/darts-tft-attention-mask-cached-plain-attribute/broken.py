"""darts 0.43's `_TFTModule`, reduced: the causal attention mask is cached in a plain
attribute (`self.attention_mask`) the first time a batch size is seen. The model is trained on
the GPU, moved to the CPU for inference, and the cached mask stays on the GPU.

Upstream: https://github.com/unit8co/darts/issues/3052 (fixed by PR #3053, darts 0.44.0).
"""

import torch
from torch import nn


class _ScaledDotProductAttention(nn.Module):
    """darts/models/forecasting/tft_submodels.py, without dropout."""

    def __init__(self, scale: bool = True):
        super().__init__()
        self.softmax = nn.Softmax(dim=2)
        self.scale = scale

    def forward(self, q, k, v, mask=None):
        attn = torch.bmm(q, k.permute(0, 2, 1))  # query-key overlap
        if self.scale:
            dimension = torch.sqrt(torch.tensor(k.shape[-1]).to(torch.float32))
            attn = attn / dimension
        if mask is not None:
            attn = attn.masked_fill(mask, -1e9)
        attn = self.softmax(attn)
        output = torch.bmm(attn, v)
        return output, attn


class _InterpretableMultiHeadAttention(nn.Module):
    """darts/models/forecasting/tft_submodels.py, without dropout."""

    def __init__(self, n_head: int, d_model: int):
        super().__init__()
        self.n_head = n_head
        self.d_model = d_model
        self.d_k = self.d_q = self.d_v = d_model // n_head
        self.v_layer = nn.Linear(self.d_model, self.d_v)
        self.q_layers = nn.ModuleList([nn.Linear(self.d_model, self.d_q) for _ in range(self.n_head)])
        self.k_layers = nn.ModuleList([nn.Linear(self.d_model, self.d_k) for _ in range(self.n_head)])
        self.attention = _ScaledDotProductAttention()
        self.w_h = nn.Linear(self.d_v, self.d_model, bias=False)

    def forward(self, q, k, v, mask=None):
        heads = []
        attns = []
        vs = self.v_layer(v)
        for i in range(self.n_head):
            qs = self.q_layers[i](q)
            ks = self.k_layers[i](k)
            head, attn = self.attention(qs, ks, vs, mask)
            heads.append(head)
            attns.append(attn)
        head = torch.stack(heads, dim=2) if self.n_head > 1 else heads[0]
        attn = torch.stack(attns, dim=2)
        outputs = torch.mean(head, dim=2) if self.n_head > 1 else head
        outputs = self.w_h(outputs)
        return outputs, attn


class _TFTModule(nn.Module):
    """darts/models/forecasting/tft_model.py in 0.43.0: the embeddings, LSTM encoder-decoder and
    gated residual networks are reduced to two linear layers; the mask caching is unchanged."""

    def __init__(self, input_chunk_length, output_chunk_length, n_past, n_future,
                 hidden_size=16, num_attention_heads=4, full_attention=False):
        super().__init__()
        self.input_chunk_length = input_chunk_length
        self.output_chunk_length = output_chunk_length
        self.full_attention = full_attention
        self.past_embedding = nn.Linear(n_past, hidden_size)
        self.future_embedding = nn.Linear(n_future, hidden_size)
        self.multihead_attn = _InterpretableMultiHeadAttention(num_attention_heads, hidden_size)
        self.output_layer = nn.Linear(hidden_size, 1)

        # initialize last batch size to check if new mask needs to be generated
        self.batch_size_last = -1
        self.attention_mask = None  # a plain attribute: Module.to() never sees it

    @staticmethod
    def get_attention_mask_future(encoder_length, decoder_length, batch_size, device, full_attention):
        if full_attention:
            decoder_mask = torch.zeros((decoder_length, decoder_length), dtype=torch.bool, device=device)
        else:
            attend_step = torch.arange(decoder_length, device=device)
            predict_step = torch.arange(0, decoder_length, device=device)[:, None]
            decoder_mask = attend_step >= predict_step
        encoder_mask = torch.zeros(batch_size, encoder_length, dtype=torch.bool, device=device)
        mask = torch.cat(
            (
                encoder_mask.unsqueeze(1).expand(-1, decoder_length, -1),
                decoder_mask.unsqueeze(0).expand(batch_size, -1, -1),
            ),
            dim=2,
        )
        return mask

    def forward(self, x_in):
        x_cont_past, x_cont_future = x_in
        device = x_in[0].device
        batch_size = x_cont_past.shape[0]
        encoder_length = self.input_chunk_length
        decoder_length = self.output_chunk_length

        # avoid unnecessary regeneration of attention mask
        if batch_size != self.batch_size_last:
            self.attention_mask = self.get_attention_mask_future(
                encoder_length=encoder_length,
                decoder_length=decoder_length,
                batch_size=batch_size,
                device=device,
                full_attention=self.full_attention,
            )
            self.batch_size_last = batch_size

        attn_input = torch.cat(
            [self.past_embedding(x_cont_past), self.future_embedding(x_cont_future)], dim=1
        )
        attn_out, attn_out_weights = self.multihead_attn(
            q=attn_input[:, encoder_length:],
            k=attn_input,
            v=attn_input,
            mask=self.attention_mask,
        )
        return self.output_layer(attn_out)


torch.manual_seed(0)
x_past = torch.randn(8, 4, 2)    # batch of 8: 4 past steps, target + past covariate
x_future = torch.randn(8, 2, 1)  # 2 future steps, one future covariate
y = torch.randn(8, 2, 1)

model = _TFTModule(input_chunk_length=4, output_chunk_length=2, n_past=2, n_future=1)

# fit(): the trainer runs the module on the GPU and caches the mask there
model.to("cuda")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss = nn.functional.mse_loss(model((x_past.to("cuda"), x_future.to("cuda"))), y.to("cuda"))
loss.backward()
optimizer.step()

# then back to the CPU for inference (or ONNX export), with the same batch size
model.cpu()
with torch.no_grad():
    prediction = model((x_past, x_future))
print(prediction[0].squeeze())
