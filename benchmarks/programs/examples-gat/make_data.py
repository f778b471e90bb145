"""Synthetic Cora (the LINQS format load_cora reads): cora/cora.content and cora/cora.cites."""
import os
import random

N_NODES, N_WORDS, N_EDGES = 1800, 120, 4000
CLASSES = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
           "Reinforcement_Learning", "Rule_Learning", "Theory"]

rng = random.Random(0)
os.makedirs("cora", exist_ok=True)
ids = rng.sample(range(1, 10**6), N_NODES)
label = {i: rng.randrange(len(CLASSES)) for i in ids}
with open("cora/cora.content", "w") as f:
    for i in ids:
        c = label[i]
        words = [1 if (rng.random() < 0.03 or (w % len(CLASSES) == c and rng.random() < 0.15)) else 0
                 for w in range(N_WORDS)]
        f.write("\t".join([str(i)] + [str(w) for w in words] + [CLASSES[c]]) + "\n")
with open("cora/cora.cites", "w") as f:
    for _ in range(N_EDGES):
        a = rng.choice(ids)
        same = [j for j in rng.sample(ids, 8) if label[j] == label[a]]
        b = same[0] if same and rng.random() < 0.8 else rng.choice(ids)
        if a != b:
            f.write(f"{a}\t{b}\n")
