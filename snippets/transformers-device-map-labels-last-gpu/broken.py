"""transformers 4.46.0-4.47.1, reduced: `LlamaForSequenceClassification` split over two GPUs
(`device_map="auto"`). PR #34191 moved the loss into `loss/loss_utils.py` and dropped the
`labels = labels.to(logits.device)` line, so the labels stay on the first GPU while the
classification head -- and the logits -- sit on the last one.

Upstream: https://github.com/huggingface/transformers/pull/34191 (regression, reported in its
review thread), fixed by https://github.com/huggingface/transformers/pull/35395 (4.48.0).
"""

from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def fixed_cross_entropy(source, target, num_items_in_batch=None, ignore_index=-100, **kwargs):
    """transformers/loss/loss_utils.py, 4.46."""
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = F.cross_entropy(source, target, ignore_index=ignore_index, reduction=reduction)
    if reduction == "sum":
        loss = loss / num_items_in_batch
    return loss


def ForSequenceClassificationLoss(labels, pooled_logits, config, **kwargs):
    """transformers/loss/loss_utils.py, 4.46 (single-label branch): no device move."""
    num_labels = config.num_labels
    if config.problem_type is None:
        config.problem_type = "single_label_classification"  # num_labels > 1, integer labels
    return fixed_cross_entropy(pooled_logits.view(-1, num_labels), labels.view(-1), **kwargs)


class LlamaModel(nn.Module):
    """Embedding, decoder layers and final norm, shrunk."""

    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(nn.Linear(config.hidden_size, config.hidden_size) for _ in range(2))
        self.norm = nn.LayerNorm(config.hidden_size)

    def forward(self, input_ids):
        hidden_states = self.embed_tokens(input_ids)
        for decoder_layer in self.layers:
            hidden_states = torch.tanh(decoder_layer(hidden_states))
        return self.norm(hidden_states)


class LlamaForSequenceClassification(nn.Module):
    """transformers/models/llama/modeling_llama.py, 4.46, shrunk."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.score = nn.Linear(config.hidden_size, config.num_labels, bias=False)
        self.loss_function = ForSequenceClassificationLoss

    def forward(self, input_ids, labels=None):
        hidden_states = self.model(input_ids)
        logits = self.score(hidden_states)
        batch_size = input_ids.shape[0]
        # the last non-padding token of each row (-1: the last token, there is no padding here)
        sequence_lengths = torch.eq(input_ids, self.config.pad_token_id).int().argmax(-1) - 1
        sequence_lengths = sequence_lengths.to(logits.device)
        pooled_logits = logits[torch.arange(batch_size, device=logits.device), sequence_lengths]

        loss = None
        if labels is not None:
            loss = self.loss_function(logits=logits, labels=labels, pooled_logits=pooled_logits, config=self.config)
        return loss, pooled_logits


def dispatch_model(model, device_map):
    """accelerate's dispatch_model, reduced: each block goes to its GPU, and a pre-forward hook
    moves the block's inputs there (AlignDevicesHook)."""
    for name, device in device_map.items():
        module = model.get_submodule(name)
        module.to(device)
        module.register_forward_pre_hook(lambda m, args, device=device: tuple(a.to(device) for a in args))
    return model


config = SimpleNamespace(vocab_size=100, hidden_size=16, num_labels=3, pad_token_id=0, problem_type=None)
model = LlamaForSequenceClassification(config)
# from_pretrained(..., device_map="auto") on two GPUs: the first blocks on GPU 0, the rest and the head on GPU 1
device_map = {
    "model.embed_tokens": "cuda:0",
    "model.layers.0": "cuda:0",
    "model.layers.1": "cuda:1",
    "model.norm": "cuda:1",
    "score": "cuda:1",
}
model = dispatch_model(model, device_map)

# Trainer._prepare_inputs: the whole batch goes to args.device, the first GPU
input_ids = torch.randint(1, config.vocab_size, (4, 7)).to("cuda:0")
labels = torch.randint(0, config.num_labels, (4,)).to("cuda:0")
loss, pooled_logits = model(input_ids, labels=labels)
loss.backward()
print(loss)
