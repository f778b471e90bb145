"""A paste's control characters are shown escaped, never sent to the terminal (issue 29): an
ESC sequence can clear the screen or retitle the window, U+202E reverses the text after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PASTE = ('Traceback (most recent call last):\n'
         '  File "/tmp/ev\u202eil.py", line 3, in <module>\n'
         '    y = model(x)\n'
         'RuntimeError: Expected all tensors to be on the same device, but found at least two devices, '
         'cuda:0 and cpu!\n')
CONTROLS = [chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))] + \
    ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]


def _explain(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "samedevice", "explain", *args, "-"], input=PASTE.encode(),
                          capture_output=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    return proc.stdout.decode("utf-8")


def test_the_report_shows_a_bidi_override_escaped():
    out = _explain()
    assert "/tmp/ev\\u202eil.py" in out
    assert not any(c in out for c in CONTROLS)


def test_the_json_stays_valid_and_carries_the_character_escaped():
    out = _explain("--json")
    assert not any(c in out for c in CONTROLS)
    assert "/tmp/ev\u202eil.py" in json.dumps(json.loads(out), ensure_ascii=False)
