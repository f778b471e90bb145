"""The browser engine (docs/javascripts/explain.js, run under node) against the Python engine.

Both read the same data (samedevice.explain.browser.build_data). They must agree exactly on
every vector, every dev-set report, every seed traceback and a few hundred generated pastes
(noise, prefixes, colours, wrapping, escaping), and the vectors' expectations hold for both.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from conftest import ROOT, SEED, VECTORS, check

SCRIPT = ROOT / "docs" / "javascripts" / "explain.js"
DEVSETS = (ROOT.parent / "shared" / "devset" / "reports.jsonl", ROOT / "benchmarks" / "devset" / "reports.jsonl")

NODE_RUNNER = r"""
const fs = require("fs");
const api = require(process.argv[2]);
const kb = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const inputs = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
const out = inputs.map((text) => {
  try {
    const ok = api.explain(text, kb);
    return ok.thin && ok.template ? { ok: ok, thin: api.thinText(ok) } : { ok: ok };
  }
  catch (e) { return { error: e.name, message: e.message }; }
});
fs.writeFileSync(process.argv[5], JSON.stringify(out));
"""

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (needed to run explain.js)")


def _fuzz(n: int) -> list[str]:
    """Pastes built from real message texts and the noise real pastes carry."""
    rng = random.Random(4)
    pieces = [v["text"] for v in VECTORS]
    noise = [
        "[rank{r}]: ", "2024-05-01T12:00:00.123Z ", "\x1b[31m", "\x1b[0m", "[0m", "E   ", "> ",
        "INFO:root:", "  ", "\t", "&lt;", "&#39;", "\uff1a", "\u3000", "\u2018", "\U0001F525", "\r\n",
        'File "C:\\x\\site-packages\\torch\\optim\\adam.py", line 3, in step\n    optimizer.step()\n',
        'File "/a/b.py", line 4, in forward\n    t = torch.zeros(3)\n',
    ]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 4)):
            text = rng.choice(pieces)
            if rng.random() < 0.3:  # wrap at a fixed width, as a terminal does
                width = rng.randint(20, 90)
                text = "\n".join(text[i : i + width] for i in range(0, len(text), width))
            parts.append(rng.choice(noise).replace("{r}", str(rng.randint(0, 7))) + text)
        out.append(("\n" if rng.random() < 0.8 else " ").join(parts))
    return out


def _inputs() -> list[str]:
    texts = [v["text"] for v in VECTORS]
    for devset in DEVSETS:  # the old 44 and the whole new dev set (both halves)
        if devset.is_file():
            texts += [json.loads(line)["text"] for line in devset.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts += [p.read_text(encoding="utf-8") for p in sorted(SEED.glob("*.txt"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted((SEED.parent / "seed_threads").glob("*.txt"))]
    texts += _fuzz(300)
    texts += ["", "   \n ", "a\x00b", "\x01\x02\x03\x04\x05\x06\x07\x0e\x0f\x10\x11\x12 binary", "no device error here"]
    return texts


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    from samedevice.explain.browser import build_data
    from samedevice.explain.clean import InputError, check_text
    from samedevice.explain.engine import explain_text
    from samedevice.explain.knowledge import build

    tmp = tmp_path_factory.mktemp("parity")
    inputs = _inputs()
    (tmp / "data.json").write_text(json.dumps(build_data()), encoding="utf-8")
    (tmp / "inputs.json").write_text(json.dumps(inputs), encoding="utf-8")
    (tmp / "run.js").write_text(NODE_RUNNER, encoding="utf-8")
    subprocess.run(
        ["node", str(tmp / "run.js"), str(SCRIPT), str(tmp / "data.json"), str(tmp / "inputs.json"), str(tmp / "out.json")],
        check=True,
        timeout=300,
    )
    js = json.loads((tmp / "out.json").read_text(encoding="utf-8"))
    kb = build()
    py = []
    for text in inputs:
        try:
            check_text(text)
            # through JSON, as the browser's result is: tuples become lists, keys strings
            py.append({"ok": json.loads(json.dumps(explain_text(text, kb)))})
        except InputError as e:
            py.append({"error": "InputError", "message": str(e)})
    return inputs, py, js


def test_same_results(both):
    inputs, py, js = both
    differing = [
        (text[:80], key)
        for text, p, j in zip(inputs, py, js, strict=True)
        for key in sorted(set(p.get("ok", p)) | set(j.get("ok", j)))
        if p.get("ok", p).get(key) != j.get("ok", j).get(key)
    ]
    assert differing == []


def test_thin_paste_text_alike(both):
    """What the page says of a thin paste is what the terminal says, word for word."""
    from samedevice.explain.report import thin_text

    _, py, js = both
    pairs = [(thin_text(p["ok"]), j["thin"]) for p, j in zip(py, js, strict=True) if "thin" in j]
    assert len(pairs) > 50
    assert [a for a, b in pairs if a != b] == []
    assert not any("catalogue" in b or "tune" in b for _, b in pairs)


def test_vectors_hold_in_the_browser(both):
    _, _, js = both
    failures = {v["name"]: check(js[i]["ok"], v["expect"]) for i, v in enumerate(VECTORS)}
    assert {k: v for k, v in failures.items() if v} == {}


def test_bad_input_rejected_alike(both):
    _, py, js = both
    bad = [(p, j) for p, j in zip(py, js, strict=True) if "error" in p]
    assert len(bad) == 4  # empty, blank, NUL, control characters
    assert all(p == j for p, j in bad)
    assert {p["message"].split(";")[0].split(" (")[0] for p, _ in bad} == {
        "the input is empty",
        "the input looks binary",
    }
