"""Synthetic inputs for sample.py --init_from=resume: data/shakespeare_char/meta.pkl (the layout of
data/shakespeare_char/prepare.py), out/ckpt.pt (the layout train.py saves: a small GPT built with the
program's own model.py, randomly initialised, on the CPU) and a stand-in `tiktoken` module: sample.py
imports tiktoken at the top but uses it only when no meta.pkl is found, and tiktoken is not installed."""
import os
import pickle
import random
import sys

rng = random.Random(0)
speakers = ["FIRST CITIZEN", "MENENIUS", "CORIOLANUS", "VOLUMNIA", "BRUTUS", "SICINIUS"]
words = ("the of and to my is you that in not it me with be your for his this but he have as "
         "what so will him all do shall are by thou our good no we now lord if here more they "
         "come well then or let at how there love should o say upon sir man know make such one "
         "go give king speak noble rome people first citizen hear death heart blood honour").split()
parts = []
while sum(len(p) for p in parts) < 40000:
    lines = []
    for _ in range(rng.randint(1, 4)):
        line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 10)))
        lines.append(line[0].upper() + line[1:] + rng.choice([",", ".", "!", "?", ";", ":"]))
    parts.append(rng.choice(speakers).title() + ":\n" + "\n".join(lines) + "\n\n")
data = "".join(parts)

chars = sorted(set(data))
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}
os.makedirs(os.path.join("data", "shakespeare_char"), exist_ok=True)
with open(os.path.join("data", "shakespeare_char", "meta.pkl"), "wb") as f:
    pickle.dump({"vocab_size": len(chars), "itos": itos, "stoi": stoi}, f)

sys.path.insert(0, os.getcwd())
import torch  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402

torch.manual_seed(0)
model_args = dict(n_layer=2, n_head=4, n_embd=64, block_size=64, bias=False, vocab_size=len(chars), dropout=0.0)
model = GPT(GPTConfig(**model_args))
os.makedirs("out", exist_ok=True)
torch.save({"model": model.state_dict(), "model_args": model_args, "iter_num": 0, "best_val_loss": 9.9,
            "config": {"dataset": "shakespeare_char"}}, os.path.join("out", "ckpt.pt"))

with open("tiktoken.py", "w") as f:
    f.write('"""Stand-in for tiktoken (not installed); sample.py uses it only without a meta.pkl."""\n\n\n'
            'def get_encoding(name):\n    raise ImportError("tiktoken is not installed")\n')
