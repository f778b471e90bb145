"""Setup for pretraining_simple.py, run in ch05/03_bonus_pretraining_on_gutenberg of the run copy.

- Stands in for `pip install -e .` of the repository's pkg/: links pkg/llms_from_scratch next to the
  script (the script imports llms_from_scratch.ch02/ch04/ch05 from it).
- Writes a stand-in tiktoken.py (tiktoken is a compiled package, not installed): UTF-8 bytes as ids
  0-255, any other id decoded as <id>; used to tokenize the books and print samples.
- Writes a stand-in matplotlib package (compiled, not installed): llms_from_scratch.ch05 imports
  matplotlib.pyplot and matplotlib.ticker.MaxNLocator, and the script plots its losses at the end; the
  stand-in accepts every call and draws nothing.
- Writes gutenberg/data/: two small synthetic "books" (seeded pseudo-English text) in place of the
  Project Gutenberg download that prepare_dataset.py would make.
Nothing on the device is involved in any of these.
"""
import os
import random

if not os.path.exists("llms_from_scratch"):
    os.symlink(os.path.join("..", "..", "pkg", "llms_from_scratch"), "llms_from_scratch")

TIKTOKEN = '''"""Stand-in for tiktoken.get_encoding("gpt2"): UTF-8 bytes as ids 0-255 (written by the benchmark)."""


class _Encoding:
    n_vocab = 50257

    def encode(self, text, allowed_special=None):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return "".join(chr(i) if 32 <= i < 127 else f"<{i}>" for i in ids)


def get_encoding(name):
    return _Encoding()
'''

NOTHING = '''"""Stand-in for matplotlib (written by the benchmark): every call is accepted and draws nothing."""


class _Nothing:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Nothing()

    def __getattr__(self, name):
        return _Nothing()

    def __iter__(self):
        return iter((_Nothing(), _Nothing()))


def use(*args, **kwargs):
    pass


def __getattr__(name):
    return _Nothing()
'''

with open("tiktoken.py", "w") as f:
    f.write(TIKTOKEN)
os.makedirs("matplotlib", exist_ok=True)
for name in ("__init__.py", "pyplot.py", "ticker.py"):
    with open(os.path.join("matplotlib", name), "w") as f:
        f.write(NOTHING)

WORDS = ("the of and to a in that he was it his with as for had you not be her on at by which have "
         "or from this him but all she they were my are me one their so an said them we who would "
         "been will no when there if more out up into do any your what has man could other than our "
         "some very time upon about may its only now like little then can should made did us such "
         "great before must two these see know over much down after first good men own never").split()
rng = random.Random(0)
os.makedirs(os.path.join("gutenberg", "data"), exist_ok=True)
for book in range(2):
    sentences = []
    while sum(len(s) for s in sentences) < 1800:
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 14))]
        sentences.append(" ".join(words).capitalize() + ".")
    with open(os.path.join("gutenberg", "data", f"PG{1000 + book}.txt"), "w", encoding="utf-8") as f:
        f.write(" ".join(sentences) + "\n")
