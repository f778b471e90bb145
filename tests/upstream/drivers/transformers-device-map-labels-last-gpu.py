"""Upstream driver for transformers-device-map-labels-last-gpu: a real transformers
sequence-classification model loaded with ``device_map="auto"`` over two (simulated) GPUs.

transformers PR #34191 (4.46.0) moved every model's loss into ``loss/loss_utils.py`` and
dropped the per-model ``labels = labels.to(logits.device)``; with the score head on the last GPU
``ForSequenceClassificationLoss`` computes the cross-entropy of cuda:1 logits against cuda:0
labels. PR #35395 (4.48.0) moves the labels again. Run by tests/upstream with one release on
PYTHONPATH and a simulated machine of two GPUs.
"""

from __future__ import annotations

import tempfile

import torch
from _report import imported, report


def main() -> None:
    import transformers
    from transformers import (
        AutoModelForSequenceClassification,
        LlamaConfig,
        LlamaForSequenceClassification,
    )

    imported(transformers, "transformers")
    torch.manual_seed(0)
    # a tiny Llama from a config, saved and loaded back the way a checkpoint is: no download
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
                         num_labels=3, pad_token_id=0)
    with tempfile.TemporaryDirectory() as folder:
        LlamaForSequenceClassification(config).save_pretrained(folder)
        # a model too large for one GPU, scaled down: max_memory caps the first GPU at about
        # half the weights, so accelerate splits the layers and the score head lands on the last
        model = AutoModelForSequenceClassification.from_pretrained(
            folder, device_map="auto", max_memory={0: "100KB", 1: "10MB"})
    placement = sorted({str(p.device) for p in model.parameters()})
    input_ids = torch.randint(1, 64, (2, 8)).to("cuda")  # the Trainer puts inputs on cuda:0
    labels = torch.tensor([0, 2]).to("cuda")
    out = model(input_ids=input_ids, labels=labels)
    out.loss.backward()
    report(event="done", loss=out.loss.item(), placement=placement,
           score_device=str(model.score.weight.device))


if __name__ == "__main__":
    main()
