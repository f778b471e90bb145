"""Adversarial pastes for ``samedevice explain``: both engines must stay linear in the input size.

    python benchmarks/explain_adversarial.py [--scale N]

Each input is built to make a badly bounded regex backtrack (a phrase that almost starts a
message, repeated with no separator; long paths; long runs of one character) or is simply large
(a 400 KB paste). For each it prints the time the Python engine and the browser engine (explain.js
under node, when node is installed) take at the size given and at twice that size: a ratio near 2
means linear, near 4 quadratic. ``tests/explain/test_reliability.py`` runs the same inputs and
only checks that they finish (no timed assertions in tests).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "javascripts" / "explain.js"


def inputs(scale: int = 1) -> dict[str, str]:
    """Name -> paste. ``scale`` multiplies every repeat count."""
    tb = (ROOT / "tests" / "explain" / "seed" / "rasbt__LLMs-from-scratch.txt").read_text(encoding="utf-8")
    line = "[rank0]:[2024-05-01 12:00:00,000] INFO train.py:88 step 1 loss=0.1234 lr=0.0001\n"
    return {
        "can'tconvert x8000 (96 KB)": "can'tconvert" * 8000 * scale,
        "can't convert x8000": "can't convert " * 8000 * scale,
        "message prefix repeated": "expected all tensors to be on the same device " * 3000 * scale,
        "input type ( repeated": "input type (torch.FloatTensor) and weight type " * 3000 * scale,
        # the catalogue's catch-all (t13-generic-same-device) reads up to three words between
        # "expected" and "same device": long words that never reach "on the" must not backtrack
        "expected + long words": ("expected " + "a" * 1500 + " " + "b" * 1500 + " same device ") * 40 * scale,
        # issue 29's reproduction: lines of one long word after "same device" (80 KB took 28 s,
        # the forms beginning with a group ran their regex on every window)
        "same device + long word lines": ("same device " + "a" * 1988 + "\n") * 40 * scale,
        "tensor for argument repeated": "Tensor for argument #1 'self' is on CPU, " * 5000 * scale,
        "frame headers without end": 'File "a.py' * 20000 * scale,
        "long paths": ('  File "/x/' + "a/" * 900 + '.py", line 1, in f\n') * 100 * scale,
        "400 KB log then a traceback": line * (400_000 * scale // len(line)) + tb,
        "400 KB of spaces": " " * 400_000 * scale,
        "400 KB one line": "cuda:0 and " * 36_000 * scale,
        "entities": "&amp;" * 80_000 * scale,
        "lost ANSI escapes": "[1;" * 100_000 * scale,
    }


_NODE = r"""
const fs = require("fs");
const api = require(process.argv[2]);
const kb = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const inputs = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
const out = [];
for (const text of inputs) {
  const t = process.hrtime.bigint();
  try { api.explain(text, kb); } catch (e) { if (e.name !== "InputError") throw e; }
  out.push(Number(process.hrtime.bigint() - t) / 1e9);
}
process.stdout.write(JSON.stringify(out));
"""


def python_times(texts: list[str]) -> list[float]:
    from samedevice.explain.clean import InputError, check_text
    from samedevice.explain.engine import explain_text
    from samedevice.explain.knowledge import build

    kb = build()
    explain_text("warm up", kb)
    out = []
    for text in texts:
        start = time.perf_counter()
        try:
            check_text(text)
            explain_text(text, kb)
        except InputError:
            pass
        out.append(time.perf_counter() - start)
    return out


def node_times(texts: list[str]) -> list[float] | None:
    if shutil.which("node") is None:
        return None
    from samedevice.explain.browser import build_data

    with tempfile.TemporaryDirectory() as tmp:
        data, src, runner = Path(tmp) / "data.json", Path(tmp) / "inputs.json", Path(tmp) / "run.js"
        data.write_text(json.dumps(build_data()), encoding="utf-8")
        src.write_text(json.dumps(texts), encoding="utf-8")
        runner.write_text(_NODE, encoding="utf-8")
        r = subprocess.run(["node", str(runner), str(SCRIPT), str(data), str(src)], capture_output=True, text=True, check=True, timeout=600)
    return json.loads(r.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1, help="base size multiplier (the doubled run uses twice this)")
    args = parser.parse_args(argv)
    one, two = inputs(args.scale), inputs(2 * args.scale)
    names = list(one)
    texts = [one[n] for n in names] + [two[n] for n in names]
    print("measuring the Python engine ...", file=sys.stderr)
    py = python_times(texts)
    print("measuring the browser engine (node) ...", file=sys.stderr)
    js = node_times(texts)
    k = len(names)
    print(f"{'input':<30}{'bytes':>10}{'python s':>10}{'x2 ratio':>10}{'node s':>10}{'x2 ratio':>10}")
    for i, name in enumerate(names):
        row = f"{name:<30}{len(one[name]):>10,}{py[i]:>10.3f}{py[k + i] / max(py[i], 1e-4):>10.2f}"
        if js is not None:
            row += f"{js[i]:>10.3f}{js[k + i] / max(js[i], 1e-4):>10.2f}"
        else:
            row += f"{'(no node)':>20}"
        print(row)
    print("\nratio = time at twice the size / time at the size: ~2 linear, ~4 quadratic")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
