"""Inputs for generate.py (no network, no downloads here):

- checkpoints/stories15M/model.pth: the program's own Transformer.from_name("stories15M") (the config
  the README's scripts/prepare.sh downloads), randomly initialised, saved as a state dict on the CPU;
- checkpoints/stories15M/tokenizer.model: a placeholder file (generate.py asserts it exists);
- stand-ins for the compiled tokenizer packages tokenizer.py imports, sentencepiece and tiktoken (not
  installed): the stand-in SentencePieceProcessor encodes UTF-8 bytes and renders ids as <id>; tiktoken
  is only imported.
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import torch
from model import Transformer

torch.manual_seed(0)
os.makedirs("checkpoints/stories15M", exist_ok=True)
model = Transformer.from_name("stories15M")
torch.save(model.state_dict(), "checkpoints/stories15M/model.pth")
with open("checkpoints/stories15M/tokenizer.model", "w") as f:
    f.write("placeholder\n")

with open("sentencepiece.py", "w") as f:
    f.write('''"""Stand-in for sentencepiece (written by the benchmark): ids are shown as <id>."""


class SentencePieceProcessor:
    def __init__(self, model_file=None, **kwargs):
        self.model_file = model_file

    def EncodeAsIds(self, text):
        return [3 + (b % 250) for b in text.encode("utf-8")]

    def DecodeIds(self, ids):
        return "".join(f"<{i}>" for i in ids)

    def bos_id(self):
        return 1

    def eos_id(self):
        return 2
''')
os.makedirs("tiktoken", exist_ok=True)
with open("tiktoken/__init__.py", "w") as f:
    f.write('"""Stand-in for tiktoken (written by the benchmark); only imported here."""\n\n\n'
            'class Encoding:\n    def __init__(self, *args, **kwargs):\n'
            '        raise ImportError("tiktoken is not installed")\n')
with open("tiktoken/load.py", "w") as f:
    f.write('def load_tiktoken_bpe(path):\n    raise ImportError("tiktoken is not installed")\n')
