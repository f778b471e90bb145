"""Writes a synthetic input.txt (the program reads tiny-shakespeare from this file; no download here)."""
import random

random.seed(0)
words = ["the", "king", "shall", "not", "love", "thee", "my", "lord", "what", "is", "death",
         "sweet", "night", "come", "away", "good", "sir", "her", "and", "to", "be", "or"]
lines = []
for _ in range(2000):
    speaker = random.choice(["ROMEO", "JULIET", "KING", "NURSE"])
    lines.append(speaker + ":\n" + " ".join(random.choice(words) for _ in range(random.randint(4, 10))).capitalize() + ".\n")
with open("input.txt", "w", encoding="utf-8") as f:
    f.write("\n".join(lines))
