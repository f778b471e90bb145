"""How well ``samedevice explain`` reads real reports, side by side with the site's own search.

    python benchmarks/explain_devset.py [--devset PATH] [--old PATH] [--site DIR] [--misses tune|old|none] [--timing]

On three sets of real reports with labels: the check half and the tune half of
``benchmarks/devset/reports.jsonl`` (its ``split`` field; rules are tuned on the tune half only,
the check half is for measuring) and the first 44-record dev set (``shared/devset``), it prints,
for explain and for mkdocs-material's built-in search (lunr) over the built site:

* template accuracy (all records);
* family top-1 and top-3, on the records whose family is labelled (not "unknown");
* for explain, the same family figures split by its own ``thin`` field: pastes where it found
  evidence beyond the message, and thin ones, which it ranks by counts while saying that the
  message alone cannot tell the families apart (``explain_calibration.py`` bounds what any
  reader of the message alone could score on the thin ones);
* seed-case hits: the seed tracebacks in tests/explain/seed (one per seed case, found through
  the case's upstream project) and any dev-set record whose URL is a case's upstream link.

The search baseline replays each pasted text against the built ``search/search_index.json``
with Material's own search worker (``assets/javascripts/workers/search.*.min.js``) run under
node, as shared/notes/docs-stack.md §4 describes; a result page maps to a template (a
``messages/tN/`` page, or a case page's documented template), a family (``families/fN/``, or a
case page's family) and a case. ``--site`` defaults to ``site/`` (``make site``); without a built
site the baseline column says so.

``--timing`` measures cold runs of the
CLI in fresh interpreters (a 4 KB traceback and a 10 MB log).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEVSET = ROOT / "benchmarks" / "devset" / "reports.jsonl"
OLD_DEVSET = ROOT.parent / "shared" / "devset" / "reports.jsonl"
SEED = ROOT / "tests" / "explain" / "seed"

# Material's search worker in a node vm: the SETUP message gets the search index, each QUERY a
# pasted text (exactly what the search box would send); prints one list of result URLs a line.
LUNR_HARNESS = r"""
const fs = require("fs");
const vm = require("vm");
const [workerPath, indexPath, queriesPath] = process.argv.slice(2);
const sandbox = { console: { warn() {}, log() {}, error() {} }, setTimeout, clearTimeout };
let handler = null;
let reply = null;
sandbox.self = sandbox;
sandbox.addEventListener = (type, fn) => { if (type === "message") handler = fn; };
sandbox.postMessage = (msg) => { reply = msg; };
sandbox.importScripts = () => {};
vm.createContext(sandbox);
vm.runInContext(fs.readFileSync(workerPath, "utf8"), sandbox);
async function send(msg) { reply = null; await handler({ data: msg }); return reply; }
(async () => {
  const index = JSON.parse(fs.readFileSync(indexPath, "utf8"));
  // the theme adds its search options (search.suggest) before handing the index to the worker
  index.options = index.options || { suggest: false };
  await send({ type: 0, data: index });
  const queries = JSON.parse(fs.readFileSync(queriesPath, "utf8"));
  for (const q of queries) {
    const res = await send({ type: 2, data: q });
    const urls = ((res && res.data && res.data.items) || []).map((group) => group[0].location.split("#")[0]);
    process.stdout.write(JSON.stringify(urls) + "\n");
  }
})();
"""


def load_devset(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def seed_probes(cases) -> list[tuple[str, set[str]]]:
    """(text, {expected case slug}) for each seed traceback whose case is registered: the seed
    case is the first registered case (lowest id) of the traceback's upstream project; later
    cases of the same project (a second Lightning case) are not what the seed report shows."""
    probes = []
    for path in sorted(SEED.glob("*.txt")):
        project = path.stem.replace("__", "/")
        matching = sorted((c for c in cases if c.upstream.project == project), key=lambda c: c.id)
        if matching:
            probes.append((path.read_text(encoding="utf-8"), {matching[0].slug}))
    return probes


def devset_case_records(records, cases) -> list[tuple[str, set[str]]]:
    """Dev-set records that are reports of registered cases (their URL is an upstream link of
    each); the top case must be one of them."""
    out = []
    for r in records:
        slugs = set()
        for c in cases:
            links = {x.url.rstrip("/") for kind in ("issue", "fix", "evidence") for x in getattr(c.upstream, kind)}
            if r["url"].rstrip("/") in links:
                slugs.add(c.slug)
        if slugs:
            out.append((r["text"], slugs))
    return out


# -- the two readers ------------------------------------------------------------------------------


def explain_predictions(texts: list[str]) -> list[dict]:
    from samedevice.explain.engine import explain_text
    from samedevice.explain.knowledge import build

    kb = build()
    out = []
    for text in texts:
        r = explain_text(text, kb)
        # thin: explain found nothing beyond the message and says so (its own "thin" field)
        out.append({"template": r["template"], "families": r["families"], "cases": r["cases"], "thin": r["thin"]})
    return out


def find_worker(site: Path) -> Path | None:
    found = sorted((site / "assets" / "javascripts" / "workers").glob("search.*.min.js"))
    return found[0] if found else None


def lunr_predictions(texts: list[str], site: Path, cases) -> list[dict]:
    worker = find_worker(site)
    index = site / "search" / "search_index.json"
    by_url = {c.page_url: c for c in cases}
    with tempfile.TemporaryDirectory() as tmp:
        harness = Path(tmp) / "harness.js"
        harness.write_text(LUNR_HARNESS, encoding="utf-8")
        queries = Path(tmp) / "queries.json"
        queries.write_text(json.dumps(texts), encoding="utf-8")
        r = subprocess.run(
            ["node", str(harness), str(worker), str(index), str(queries)],
            capture_output=True, text=True, timeout=600, check=True,
        )
    out = []
    for line in r.stdout.splitlines():
        urls = json.loads(line)
        template, families, found = None, [], []
        for url in urls:
            url = url.lstrip("/")
            case = by_url.get(url)
            fam = tid = None
            if case is not None:
                fam, tid = case.family, case.error.template
                found.append(case.slug)
            elif url.startswith("families/f"):
                fam = url.split("/")[1].upper()
            elif url.startswith("messages/t"):
                tid = url.split("/")[1].upper()
            if tid and template is None:
                template = tid
            if fam and fam not in families:
                families.append(fam)
        out.append({"template": template, "families": families, "cases": found})
    return out


# -- scoring --------------------------------------------------------------------------------------


def score(records, predictions) -> dict:
    n = len(records)
    template = sum(p["template"] == r["template"] for r, p in zip(records, predictions, strict=True))
    labelled = [(r, p) for r, p in zip(records, predictions, strict=True) if r["family"] != "unknown"]
    top1 = sum(p["families"][:1] == [r["family"]] for r, p in labelled)
    top3 = sum(r["family"] in p["families"][:3] for r, p in labelled)
    scores = {"n": n, "template": (template, n), "top1": (top1, len(labelled)), "top3": (top3, len(labelled))}
    # explain's own split: pastes where it found evidence, and thin ones (the message alone,
    # where it ranks by counts and says the message cannot tell the families apart)
    for key, thin in (("evidence", False), ("thin", True)):
        part = [(r, p) for r, p in labelled if p.get("thin") is thin]
        if part:
            scores[f"top1 {key}"] = (sum(p["families"][:1] == [r["family"]] for r, p in part), len(part))
            scores[f"top3 {key}"] = (sum(r["family"] in p["families"][:3] for r, p in part), len(part))
    return scores


def case_hits(probes, predictions) -> tuple[int, int]:
    return sum(bool(p["cases"][:1]) and p["cases"][0] in slugs for (_, slugs), p in zip(probes, predictions, strict=True)), len(probes)


def fmt(pair) -> str:
    k, n = pair
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else "n/a"


def timing() -> list[str]:
    """Cold CLI runs in fresh interpreters (bytecode and the knowledge cache warm, as for a user)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    tb = (SEED / "rasbt__LLMs-from-scratch.txt").read_bytes()
    log = b"".join(b"epoch 1 step %d loss 0.%04d lr 5e-05\n" % (i, i) for i in range(300))
    small = log[: 4096 - len(tb)] + tb
    line = b"[rank0]:[2024-05-01 12:00:00,000] INFO train.py:88 step 1 loss=0.1234 lr=0.0001 throughput=512 samples/s\n"
    big = line * ((10_000_000 - len(tb)) // len(line)) + tb
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, data, runs in (("4 KB traceback", small, 9), ("10 MB log", big, 3)):
            path = Path(tmp) / "paste.txt"
            path.write_bytes(data)
            cmd = [sys.executable, "-m", "samedevice", "explain", "--json", str(path)]
            subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT, check=True)  # warm caches
            took = []
            for _ in range(runs):
                start = time.perf_counter()
                subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT, check=True)
                took.append(time.perf_counter() - start)
            rows.append(f"  {name:<16} {len(data):>10,} bytes   median {statistics.median(took) * 1000:7.1f} ms   min {min(took) * 1000:7.1f} ms   ({runs} runs)")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        rows.append(f"  {'python -c pass':<16} {'':>16}         {(time.perf_counter() - start) * 1000:7.1f} ms (interpreter start-up, for scale)")
    return rows


def _table(title: str, records: list[dict], columns: dict[str, list[dict]], probes, probe_cols) -> None:
    names = list(columns)
    labelled = sum(r["family"] != "unknown" for r in records)
    print(f"{title}: {len(records)} records, {labelled} with a labelled family")
    print(f"{'':<22}" + "".join(f"{n:>24}" for n in names))
    scored = {n: score(records, columns[n]) for n in names}
    for label, key in (("template accuracy", "template"), ("family top-1", "top1"), ("family top-3", "top3")):
        print(f"{label:<22}" + "".join(f"{fmt(scored[n][key]):>24}" for n in names))
    for label, key in (
        ("  top-1, evidence", "top1 evidence"), ("  top-3, evidence", "top3 evidence"),
        ("  top-1, thin paste", "top1 thin"), ("  top-3, thin paste", "top3 thin"),
    ):
        if key in scored["explain"]:
            print(f"{label:<22}{fmt(scored['explain'][key]):>24}")
    if probes is not None:
        hits = {n: case_hits(probes, probe_cols[n]) for n in names}
        print(f"{'seed-case hits':<22}" + "".join(f"{fmt(hits[n]):>24}" for n in names))
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devset", type=Path, default=DEVSET, help="the new dev set (with a split field: tune / check)")
    parser.add_argument("--old", type=Path, default=OLD_DEVSET, help="the first 44-record dev set")
    parser.add_argument("--site", type=Path, default=ROOT / "site", help="a built site (mkdocs build)")
    parser.add_argument("--misses", choices=("tune", "old", "none"), default="tune",
                        help="list explain's misses of this set (never the check half: it is for measuring only)")
    parser.add_argument("--timing", action="store_true", help="measure cold CLI runs")
    args = parser.parse_args(argv)

    from samedevice.cases import load_cases

    cases = load_cases()
    records = load_devset(args.devset) if args.devset.is_file() else []
    old = load_devset(args.old) if args.old.is_file() else []
    sets = {
        "check half": [r for r in records if r.get("split") == "check"],
        "tune half": [r for r in records if r.get("split") == "tune"],
        "old 44": old,
    }
    # The newest wave's check half (and the whole wave), on its own: collected after every rule it measures was
    # written, and never looked at while tuning (README.md, "Split"), it is the figure for
    # reports explain has never seen. The whole check half also holds older waves, whose
    # figures earlier sessions saw.
    newest = max((r.get("wave", 0) for r in records), default=0)
    if newest:
        sets = {
            "check half": sets["check half"],
            f"check half, wave {newest} only": [r for r in sets["check half"] if r.get("wave") == newest],
            # before the wave is used, its tune half is unseen too: both halves are the larger sample
            f"wave {newest}, both halves": [r for r in records if r.get("wave") == newest],
            **{k: v for k, v in sets.items() if k != "check half"},
        }
    seeds = seed_probes(cases)
    probes = seeds + devset_case_records(records + old, cases)
    texts = [r["text"] for recs in sets.values() for r in recs] + [t for t, _ in probes]

    print(f"explaining {len(texts)} texts ...", file=sys.stderr)
    predictions = {"explain": explain_predictions(texts)}
    index = args.site / "search" / "search_index.json"
    if not index.is_file() or find_worker(args.site) is None:
        print(f"no built site at {args.site} (run `make site` or pass --site): search baseline not measured")
    else:
        print("replaying the pastes in the site's search (lunr) ...", file=sys.stderr)
        predictions["site search (lunr)"] = lunr_predictions(texts, args.site, cases)
    print(f"cases in the registry: {len(cases)}; seed reports: {len(seeds)}; dev-set records that are a case's own upstream report: {len(probes) - len(seeds)}")
    print()
    at = 0
    for title, recs in sets.items():
        cols = {n: p[at : at + len(recs)] for n, p in predictions.items()}
        at += len(recs)
        _table(title, recs, cols, None, None)
    probe_cols = {n: p[at:] for n, p in predictions.items()}
    k = len(seeds)
    print(f"{'':<22}" + "".join(f"{n:>24}" for n in predictions))
    print(f"{'seed-case hits':<22}" + "".join(f"{fmt(case_hits(seeds, probe_cols[n][:k])):>24}" for n in predictions))
    print(f"{'case reports -> case':<22}" + "".join(f"{fmt(case_hits(probes[k:], probe_cols[n][k:])):>24}" for n in predictions))
    print()
    print("goals (check half and old 44): template >= 98%, family top-1 >= 75%, top-3 >= 90%; seed reports -> their case first")

    if args.misses != "none":
        chosen = "tune half" if args.misses == "tune" else "old 44"
        start = 0
        for title, recs in sets.items():
            if title == chosen:
                break
            start += len(recs)
        recs = sets[chosen]
        preds = predictions["explain"][start : start + len(recs)]
        misses = [
            (r["id"], r["template"], r["family"], p["template"], p["families"][:3])
            for r, p in zip(recs, preds, strict=True)
            if p["template"] != r["template"] or (r["family"] != "unknown" and r["family"] not in p["families"][:3])
        ]
        if misses:
            print()
            print(f"explain misses on the {chosen} (id, template, family, predicted template, predicted top-3):")
            for m in misses:
                print("  ", *m)
    if args.timing:
        print()
        print("cold runs of `samedevice explain --json` (fresh interpreter each):")
        for row in timing():
            print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
