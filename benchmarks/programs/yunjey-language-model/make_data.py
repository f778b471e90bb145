"""Writes a synthetic data/train.txt in Penn Treebank's layout (one sentence a line, <unk> for
rare words) in place of the 5 MB file the repository ships."""
import os
import random

random.seed(0)
nouns = ["company", "market", "stock", "price", "share", "year", "bank", "government", "<unk>", "trader"]
verbs = ["rose", "fell", "said", "bought", "sold", "reported", "expects", "plans"]
others = ["the", "a", "of", "in", "N", "million", "and", "to", "its", "last", "new", "$"]
os.makedirs("data", exist_ok=True)
with open(os.path.join("data", "train.txt"), "w") as f:
    for _ in range(250):
        words = [random.choice(others), random.choice(nouns), random.choice(verbs)]
        words += [random.choice(others + nouns) for _ in range(random.randint(3, 12))]
        f.write(" " + " ".join(words) + " \n")
