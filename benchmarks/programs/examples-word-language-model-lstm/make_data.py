"""A synthetic corpus in the Wikitext-2 layout the program reads: data/wikitext-2/{train,valid,test}.txt."""
import os
import random

rng = random.Random(0)
vocab = ["the", "of", "and", "in", "to", "a", "was", "is", "for", "on", "as", "with", "by", "he", "at",
         "from", "his", "it", "an", "were", "are", "which", "this", "also", "be", "has", "or", "had",
         "first", "one", "their", "its", "new", "after", "who", "they", "two", "her", "she", "been",
         "other", "when", "time", "during", "there", "into", "school", "more", "may", "years", "over",
         "only", "year", "most", "would", "world", "city", "some", "where", "between", "later", "three",
         "state", "such", "then", "national", "used", "made", "known", "under", "many", "university",
         "united", "while", "part", "season", "team", "these", "american", "than", "film", "second",
         "born", "south", "became", "states", "war", "through", "being", "including", "both", "before",
         "north", "high", "however", "people", "family", "early", "history", "album", "area", "river"]
vocab += [f"w{i}" for i in range(300)] + ["<unk>", "@-@", ",", "."]


def write(path, n_lines):
    with open(path, "w", encoding="utf8") as f:
        for _ in range(n_lines):
            if rng.random() < 0.1:
                f.write(" \n")
                continue
            n = rng.randint(5, 30)
            words = [rng.choice(vocab[:100]) if rng.random() < 0.7 else rng.choice(vocab) for _ in range(n)]
            f.write(" " + " ".join(words) + " . \n")


os.makedirs("data/wikitext-2", exist_ok=True)
write("data/wikitext-2/train.txt", 600)
write("data/wikitext-2/valid.txt", 80)
write("data/wikitext-2/test.txt", 80)
