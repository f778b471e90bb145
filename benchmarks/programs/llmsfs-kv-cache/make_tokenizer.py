"""A stand-in `tiktoken` next to the script: the script imports tiktoken (a compiled package, not installed
here) only to encode its fixed prompt and decode the generated ids. The stand-in encodes UTF-8 bytes as
ids 0-255 and decodes any other id as <id>; the model and everything on the device are unchanged."""

STANDIN = '''"""Stand-in for tiktoken.get_encoding("gpt2"): UTF-8 bytes as ids 0-255 (written by the benchmark)."""


class _Encoding:
    n_vocab = 50257

    def encode(self, text, allowed_special=None):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return "".join(chr(i) if 32 <= i < 127 else f"<{i}>" for i in ids)


def get_encoding(name):
    return _Encoding()
'''

with open("tiktoken.py", "w") as f:
    f.write(STANDIN)
