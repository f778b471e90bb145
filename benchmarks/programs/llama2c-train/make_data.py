"""Inputs for train.py --vocab_source=custom --vocab_size=512 (no download here):

- data/tok512/data00.bin ... data02.bin: pretokenized shards in the layout `tinystories.py pretokenize`
  writes (uint16 token ids; shard 0 is the test split), drawn from a small synthetic bigram model;
- a stand-in sentencepiece module: tokenizer.py imports SentencePieceProcessor (a compiled package, not
  installed), which training never calls.
"""
import os

import numpy as np

rng = np.random.default_rng(0)
V = 512
trans = rng.dirichlet(np.full(V, 0.05), size=V)
os.makedirs("data/tok512", exist_ok=True)
for shard in range(3):
    n = 20000
    ids = np.empty(n, dtype=np.uint16)
    ids[0] = 1
    for i in range(1, n):
        ids[i] = rng.choice(V, p=trans[ids[i - 1]])
    ids.tofile(f"data/tok512/data{shard:02d}.bin")

with open("sentencepiece.py", "w") as f:
    f.write('"""Stand-in for sentencepiece (written by the benchmark); training never calls it."""\n\n\n'
            'class SentencePieceProcessor:\n    def __init__(self, *args, **kwargs):\n'
            '        raise ImportError("sentencepiece is not installed")\n')
