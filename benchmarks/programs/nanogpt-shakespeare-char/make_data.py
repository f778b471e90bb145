"""Synthetic stand-in for data/shakespeare_char/prepare.py: a small character corpus written as
train.bin / val.bin (uint16 token ids) and meta.pkl (vocab_size, itos, stoi), the layout train.py reads."""
import os
import pickle
import random

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
