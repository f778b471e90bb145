"""Upstream library driver: LoRA (peft) on a tiny GPT-2 from a config, trained on "cuda".

With ``SAMEDEVICE_UPSTREAM_BUG=1`` the batch is never moved (CUDA names ``index`` of the
embedding's ``index_select``).
"""

from __future__ import annotations

import os

import torch
from _report import imported
from _tiny_lm import batch, model, tokenizer
from _torchvision_ops import declare_torchvision_ops

declare_torchvision_ops()  # peft imports torchvision, a CUDA build here (see _torchvision_ops)
import peft  # noqa: E402

imported(peft, "peft")
BUG = os.environ.get("SAMEDEVICE_UPSTREAM_BUG") == "1"
tok = tokenizer()
torch.manual_seed(0)
config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], lora_dropout=0.0,
                         task_type="CAUSAL_LM")
lm = peft.get_peft_model(model(), config).to("cuda")
enc = batch(tok)
if not BUG:
    enc = enc.to("cuda")
opt = torch.optim.AdamW([p for p in lm.parameters() if p.requires_grad], lr=1e-2)
losses = []
for _ in range(3):
    opt.zero_grad()
    out = lm(**enc, labels=enc["input_ids"])
    out.loss.backward()
    opt.step()
    losses.append(out.loss.detach())
adapter = {k: v for k, v in lm.state_dict().items() if "lora" in k}
