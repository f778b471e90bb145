"""Inputs for generate.py: a synthetic corpus in the Wikitext-2 layout (data/wikitext-2/{train,valid,test}.txt)
and the checkpoint model.pt it samples from, made by the program's own main.py: a one-epoch, CPU-only
training of a small Transformer (no --accel, so the checkpoint is saved on the CPU, as on a machine
without a GPU)."""
import os
import random
import subprocess
import sys

rng = random.Random(0)
vocab = ["the", "of", "and", "in", "to", "a", "was", "is", "for", "on", "as", "with", "by", "he", "at",
         "from", "his", "it", "an", "were", "are", "which", "this", "also", "be", "has", "or", "had",
         "first", "one", "their", "its", "new", "after", "who", "they", "two", "her", "she", "been",
         "other", "when", "time", "during", "there", "into", "school", "more", "may", "years", "over",
         "only", "year", "most", "would", "world", "city", "some", "where", "between", "later", "three"]
vocab += [f"w{i}" for i in range(200)] + ["<unk>", "@-@", ",", "."]


def write(path, n_lines):
    with open(path, "w", encoding="utf8") as f:
        for _ in range(n_lines):
            n = rng.randint(5, 30)
            words = [rng.choice(vocab[:60]) if rng.random() < 0.7 else rng.choice(vocab) for _ in range(n)]
            f.write(" " + " ".join(words) + " . \n")


os.makedirs("data/wikitext-2", exist_ok=True)
write("data/wikitext-2/train.txt", 300)
write("data/wikitext-2/valid.txt", 40)
write("data/wikitext-2/test.txt", 40)
subprocess.run([sys.executable, "main.py", "--model", "Transformer", "--epochs", "1", "--emsize", "32",
                "--nhid", "32", "--bptt", "20", "--batch_size", "10", "--lr", "5", "--save", "model.pt"],
               check=True, stdout=subprocess.DEVNULL)
