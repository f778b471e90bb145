"""Setup for the resume run: write the synthetic character corpus (data/shakespeare_char/
{train.bin,val.bin,meta.pkl}, prepare.py's layout), then make the checkpoint to resume from by
running the program's own train.py for 10 iterations on the CPU (out-shakespeare-char/ckpt.pt)."""
import os
import pickle
import random
import subprocess
import sys

import numpy as np

random.seed(0)
words = ["the", "king", "shall", "not", "love", "thee", "my", "lord", "what", "is", "death",
         "sweet", "night", "come", "away", "good", "sir", "her", "and", "to", "be", "or"]
lines = []
for _ in range(1500):
    speaker = random.choice(["ROMEO", "JULIET", "KING", "NURSE"])
    lines.append(speaker + ":\n" + " ".join(random.choice(words) for _ in range(random.randint(4, 10))).capitalize() + ".\n")
data = "\n".join(lines)
chars = sorted(set(data))
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}
n = len(data)
ids = np.array([stoi[c] for c in data], dtype=np.uint16)
os.makedirs(os.path.join("data", "shakespeare_char"), exist_ok=True)
ids[: int(n * 0.9)].tofile(os.path.join("data", "shakespeare_char", "train.bin"))
ids[int(n * 0.9):].tofile(os.path.join("data", "shakespeare_char", "val.bin"))
with open(os.path.join("data", "shakespeare_char", "meta.pkl"), "wb") as f:
    pickle.dump({"vocab_size": len(chars), "itos": itos, "stoi": stoi}, f)

subprocess.run([sys.executable, "train.py", "config/train_shakespeare_char.py", "--device=cpu", "--compile=False",
                "--dtype=float32", "--max_iters=10", "--lr_decay_iters=40", "--warmup_iters=5", "--eval_interval=10",
                "--eval_iters=2", "--log_interval=5", "--batch_size=8", "--block_size=64", "--n_layer=2",
                "--n_head=2", "--n_embd=64", "--always_save_checkpoint=True"],
               check=True, stdout=subprocess.DEVNULL)
assert os.path.exists(os.path.join("out-shakespeare-char", "ckpt.pt"))
