"""Inputs for sample.py (no downloads here):

- out/ckpt.pt in the layout train.py saves (model, model_args, config): a small Transformer built with
  the program's own model.py (vocab 512, dim 64, 2 layers), randomly initialised, on the CPU;
- data/tok512.model, the custom tokenizer path sample.py derives from the checkpoint (a placeholder);
- a stand-in sentencepiece module (a compiled package, not installed): its SentencePieceProcessor
  encodes UTF-8 bytes and decodes ids as <id>.
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import torch
from model import ModelArgs, Transformer

torch.manual_seed(0)
model_args = dict(dim=64, n_layers=2, n_heads=4, n_kv_heads=4, vocab_size=512, multiple_of=32,
                  max_seq_len=64, dropout=0.0)
model = Transformer(ModelArgs(**model_args))
os.makedirs("out", exist_ok=True)
torch.save({"model": model.state_dict(), "model_args": model_args, "iter_num": 0, "best_val_loss": 9.9,
            "config": {"vocab_source": "custom", "vocab_size": 512}}, "out/ckpt.pt")
os.makedirs("data", exist_ok=True)
with open("data/tok512.model", "w") as f:
    f.write("placeholder\n")

with open("sentencepiece.py", "w") as f:
    f.write('''"""Stand-in for sentencepiece (written by the benchmark): bytes in, <id> out."""


class SentencePieceProcessor:
    def __init__(self, model_file=None, **kwargs):
        self.model_file = model_file

    def vocab_size(self):
        return 512

    def get_piece_size(self):
        return 512

    def bos_id(self):
        return 1

    def eos_id(self):
        return 2

    def pad_id(self):
        return -1

    def encode(self, s):
        return [3 + b for b in s.encode("utf-8")]

    def decode(self, ids):
        return "".join(f"<{i}>" for i in ids)
''')
