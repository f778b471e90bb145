"""Upstream library driver: a tiny GPT-2 from a config, trained, generating, in a pipeline on
GPU 0 and loaded with ``device_map`` -- the way transformers code is written for CUDA.

With ``SAMEDEVICE_UPSTREAM_BUG=1`` the batch is never moved (CUDA names ``index`` of the
embedding's ``index_select``).
"""

from __future__ import annotations

import os
import tempfile

import torch
from _report import imported
from _tiny_lm import batch, model, tokenizer
from _torchvision_ops import declare_torchvision_ops

declare_torchvision_ops()  # transformers imports torchvision, a CUDA build here (see _torchvision_ops)
import transformers  # noqa: E402
from transformers import GPT2LMHeadModel, pipeline  # noqa: E402

imported(transformers, "transformers")
BUG = os.environ.get("SAMEDEVICE_UPSTREAM_BUG") == "1"
tok = tokenizer()
lm = model().to("cuda")
enc = batch(tok)
if not BUG:
    enc = enc.to("cuda")
opt = torch.optim.AdamW(lm.parameters(), lr=1e-3)
losses = []
for _ in range(3):
    opt.zero_grad()
    out = lm(**enc, labels=enc["input_ids"])
    out.loss.backward()
    opt.step()
    losses.append(out.loss.detach())
lm.eval()
prompt = tok(["the cat"], return_tensors="pt").to("cuda")
generated = lm.generate(**prompt, max_new_tokens=5, do_sample=False, pad_token_id=0)

gpu = 0 if torch.cuda.is_available() else -1  # the usual idiom
pipe = pipeline("text-generation", model=lm, tokenizer=tok, device=gpu)
pipe_text = pipe("the dog", max_new_tokens=4, do_sample=False)[0]["generated_text"]
pipe_on_gpu = int(pipe.device.type == "cuda")

folder = tempfile.mkdtemp()
lm.save_pretrained(folder)
# "cuda:0", not 0: samedevice's CPU reference run reads "cuda" strings as the CPU, while a bare
# index means "the current accelerator", which a CPU-only torch refuses
loaded = GPT2LMHeadModel.from_pretrained(folder, device_map={"": "cuda:0" if gpu >= 0 else "cpu"})
loaded_on_gpu = int(loaded.device.type == "cuda")
loaded_logits = loaded(**prompt).logits
