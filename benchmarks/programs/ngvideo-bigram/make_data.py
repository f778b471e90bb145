"""Synthetic data and a small configuration for karpathy/ng-video-lecture.

- input.txt: ~40,000 characters of play-like text (the lecture uses tinyshakespeare, 1.1 MB);
- the hyperparameter block at the top of the script is set to a small model and a short run, line for
  line (the script takes no arguments), so the line numbers of the rest of the file are unchanged.
"""
import random
import re
import sys

SCRIPT = sys.argv[1] if len(sys.argv) > 1 else "bigram.py"
SMALL = {"max_iters": "300", "eval_interval": "100",
         "eval_iters": "20"}

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
open("input.txt", "w", encoding="utf-8").write("".join(parts))

src = open(SCRIPT).read()
for name, value in SMALL.items():
    src, n = re.subn(rf"(?m)^{name} = \S+", f"{name} = {value}", src, count=1)
    if n != 1:
        raise SystemExit(f"{name} not found in {SCRIPT}")
open(SCRIPT, "w").write(src)
