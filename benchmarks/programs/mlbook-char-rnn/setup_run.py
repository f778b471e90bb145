"""Setup for ch15_part3.py, run in ch15/ of the run copy.

- The script imports python_environment_check (at the repository root) before it puts '..' on
  sys.path, so it only runs with the root on the path; link the root's file next to the script.
- Write a synthetic 1268-0.txt (seeded pseudo-English text between the two markers the script looks
  for) in place of the 1.2 MB novel: with the novel, building the 1.2 million training chunks with
  torch.tensor alone takes minutes here.
- The script's epoch count is fixed in its code (num_epochs = 10000, about an hour on a GPU); rewrite that
  one line in the run copy to 10 epochs. Nothing else in the script changes.
"""
import os
import random

if not os.path.exists("python_environment_check.py"):
    os.symlink(os.path.join("..", "python_environment_check.py"), "python_environment_check.py")

WORDS = ("the island engineer sea cliff granite house pencroft harbert neb spilett cyrus smith was were "
         "and of to a in that had he they his on with at for from which as but by all this not their "
         "settlers shore forest fire balloon lake river wind night day corral chimneys mount franklin "
         "reporter sailor boy dog top water wood stone iron nothing been would could".split())
rng = random.Random(0)
sentences = []
while sum(len(s) + 1 for s in sentences) < 12000:
    words = [rng.choice(WORDS) for _ in range(rng.randint(4, 13))]
    sentences.append(" ".join(words).capitalize() + rng.choice([".", ".", ",", "!", "?"]))
body = ""
for i, s in enumerate(sentences):
    body += s + ("\n\n" if i % 9 == 8 else "\n" if i % 3 == 2 else " ")
with open("1268-0.txt", "w", encoding="utf8") as f:
    f.write("The Project Gutenberg EBook of (a synthetic stand-in)\n\n")
    f.write("THE MYSTERIOUS ISLAND\n\n" + body + "\n\nEnd of the Project Gutenberg EBook\n")

with open("ch15_part3.py", encoding="utf-8") as f:
    lines = f.readlines()
hits = [i for i, line in enumerate(lines) if line.startswith("num_epochs = 10000")]
assert len(hits) == 1, hits
lines[hits[0]] = "num_epochs = 10 \n"
with open("ch15_part3.py", "w", encoding="utf-8") as f:
    f.writelines(lines)
