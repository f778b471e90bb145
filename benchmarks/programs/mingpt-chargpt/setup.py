"""Setup for chargpt: write a synthetic input.txt (the script reads any text file of that name;
upstream suggests tiny-shakespeare) and link mingpt/ next to the script in place of `pip install -e .`."""
import os
import random

if not os.path.exists("mingpt"):
    os.symlink(os.path.join("..", "..", "mingpt"), "mingpt")

random.seed(0)
words = ["O", "God", "my", "lord", "the", "king", "shall", "not", "love", "thee", "what", "is",
         "death", "sweet", "night", "come", "away", "good", "sir", "her", "and", "to", "be"]
lines = []
for _ in range(800):
    speaker = random.choice(["ROMEO", "JULIET", "KING", "NURSE"])
    lines.append(speaker + ":\n" + " ".join(random.choice(words) for _ in range(random.randint(4, 10)))
                 + random.choice([".", "!", ", O God!"]) + "\n")
with open("input.txt", "w") as f:
    f.write("\n".join(lines))
