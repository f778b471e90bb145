"""Run programs of this folder in one interpreter and save what each computed or raised.

    samedevice run [--cpu] [--gpus N] _driver.py OUT NAME [NAME ...]

Started by ``samedevice run``, so the programs see the simulated CUDA machine (or, with
``--cpu``, the CPU reference run). Each program runs as ``__main__`` (``runpy``) twice: as
written, and as its bug variant -- the line marked ``# bug: CODE`` replaced by ``CODE``.
One interpreter for all keeps the suite cheap (PyTorch and the simulator load once).
"""

import re
import runpy
import sys
import tempfile
from pathlib import Path

import torch

from samedevice.sim._process import _capture

HERE = Path(__file__).parent
_BUG = re.compile(r"^(?P<indent>\s*)(?P<code>.*?)\s*# bug: (?P<bug>.*)$", re.M)


def bug_variant(source: str) -> str:
    found = _BUG.findall(source)
    if len(found) != 1:
        raise SystemExit(f"a program needs exactly one '# bug:' line, found {len(found)}")
    return _BUG.sub(lambda m: m["indent"] + m["bug"], source)


def run(path: Path) -> dict:
    torch._dynamo.reset()
    try:
        env = runpy.run_path(str(path), run_name="__main__")
    except Exception as e:  # the program's own error is the result
        return {"error": [type(e).__name__, str(e)]}
    values = {}
    with torch._C.DisableTorchFunction():
        for name, value in env.items():
            if not name.startswith("_"):
                captured = _capture(value, 0)
                if captured is not None:
                    values[name] = captured
    return {"values": values}


def main() -> None:
    out, names = sys.argv[1], sys.argv[2:]
    results = {}
    tmp = Path(tempfile.mkdtemp(prefix="samedevice-programs-"))
    for name in names:
        source = (HERE / f"{name}.py").read_text()
        results[name] = run(HERE / f"{name}.py")
        bugged = tmp / f"{name}.py"
        bugged.write_text(bug_variant(source))
        results[name]["bug"] = run(bugged).get("error")
        print(name, "error" in results[name], results[name]["bug"], flush=True)
    torch.save(results, out)


if __name__ == "__main__":
    main()
