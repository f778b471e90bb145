"""Upstream driver for peft-adalora-ranknum-left-on-cpu: the real ``peft.get_peft_model`` with
AdaLoRA on a real transformers model that is already on "cuda".

huggingface/peft#541 and #581. In 0.3.0 ``AdaLoraModel._replace_module`` moves only the new
``SVDLinear``'s submodules whose names contain "lora_" to the base weight's device; the
``ranknum`` ParameterDict stays on the CPU and ``SVDLinear.forward`` divides the CUDA update by
it. 0.4.0 (PR #583) moves ``ranknum`` too. Run by tests/upstream with one release on PYTHONPATH.
"""

from __future__ import annotations

import torch
from _report import imported, report


def main() -> None:
    import peft
    from peft import AdaLoraConfig, get_peft_model
    from transformers import BertConfig, BertForSequenceClassification

    imported(peft, "peft")
    torch.manual_seed(0)
    # a tiny BERT built from a config (no download): one layer, hidden size 16
    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32, num_labels=2)
    base = BertForSequenceClassification(config).to("cuda")  # placed before get_peft_model
    # lora_dropout > 0: with 0, 0.4.0's update_layer puts a lambda into nn.ModuleDict, which
    # the PyTorch of today refuses (an unrelated TypeError, not the bug)
    model = get_peft_model(base, AdaLoraConfig(target_modules=["query", "value"], init_r=4,
                                               target_r=2, lora_alpha=8,
                                               lora_dropout=0.1))
    input_ids = torch.randint(0, 64, (2, 8), device="cuda")
    labels = torch.tensor([0, 1], device="cuda")
    out = model(input_ids=input_ids, labels=labels)
    out.loss.backward()
    ranknum = [p for n, p in model.named_parameters() if "ranknum" in n]
    report(event="done", loss=out.loss.item(), ranknum_devices=sorted({str(p.device) for p in ranknum}))


if __name__ == "__main__":
    main()
