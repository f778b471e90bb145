"""The identifiers every PyTorch project shares: never evidence that a paste is one case's code.

explain recognises a documented project's own code in a paste by the identifiers its case files
hold (``DINOLoss``, ``extract_diff``, ``train_ram_plus``: see ``samedevice.explain.fingerprint``).
Names PyTorch itself defines (``register_buffer``, ``index_select``, ``in_features``) and names
that many unrelated projects use (``input_ids``, ``hidden_states``, ``lm_head``) appear in
reports of every kind, so they are left out of those fingerprints. This script writes that list,
``src/samedevice/data/common_identifiers.json``, from two sources:

- PyTorch's public names: the attributes of ``torch``, ``torch.nn``, ``torch.nn.functional``,
  ``torch.Tensor``, ``torch.nn.Module``, ``torch.optim``, ``torch.utils.data``, ``torch.cuda``,
  ``torch.distributed``, ``torch.amp``, the parameter names of the ``nn`` layers' and
  ``nn.functional``'s signatures and the code-shaped names their docstrings use, with Python's
  builtins;
- the dev set's tune half (``benchmarks/devset/reports.jsonl``, ``split == "tune"``): a name or
  word pasted in reports of at least ``MIN_REPOS`` different repositories. The check half
  is left out, so figures measured on it stay unseen.

Usage: ``python benchmarks/common_identifiers.py [--write]`` (without ``--write`` it prints how
the file would change).
"""

from __future__ import annotations

import argparse
import builtins
import inspect
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

from samedevice.explain.fingerprint import MIN_LENGTH, identifiers, words  # noqa: E402

OUT = ROOT / "src" / "samedevice" / "data" / "common_identifiers.json"
DEVSET = HERE / "devset" / "reports.jsonl"
MIN_REPOS = 2


def torch_names() -> set[str]:
    import torch
    import torch.distributed
    import torch.nn.functional as F
    import torch.utils.data

    names: set[str] = set(dir(builtins))
    modules = [torch, torch.nn, F, torch.Tensor, torch.nn.Module, torch.optim, torch.utils.data,
               torch.cuda, torch.distributed, torch.amp, torch.nn.init, torch.nn.utils]
    for m in modules:
        names.update(n for n in dir(m) if not n.startswith("__"))
    # the names their documentation uses (``non_blocking``, ``memory_format``): keyword
    # arguments of builtins that carry no Python signature
    for m in modules:
        for n in dir(m):
            doc = getattr(getattr(m, n, None), "__doc__", None)
            if isinstance(doc, str):
                names.update(identifiers(doc))
    callables = [getattr(F, n) for n in dir(F) if not n.startswith("_")]
    callables += [getattr(torch.nn, n) for n in dir(torch.nn) if isinstance(getattr(torch.nn, n), type)]
    for fn in callables:
        try:
            names.update(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            continue
    return {n.lower() for n in names if len(n) >= MIN_LENGTH}


def devset_names() -> set[str]:
    repos: dict[str, set[str]] = {}
    for line in DEVSET.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r["split"] != "tune":
            continue
        for ident in words(r["text"]):
            repos.setdefault(ident, set()).add(r["repo"].lower())
    return {i for i, rs in repos.items() if len(rs) >= MIN_REPOS}


def build() -> dict:
    import torch

    from_torch = torch_names()
    from_devset = devset_names()
    return {
        "made_by": "benchmarks/common_identifiers.py",
        "torch": torch.__version__.split("+")[0],
        "devset": f"tune half of benchmarks/devset/reports.jsonl, pasted in >= {MIN_REPOS} repositories",
        "counts": {"torch": len(from_torch), "devset": len(from_devset - from_torch)},
        "identifiers": sorted(from_torch | from_devset),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    new = build()
    old = json.loads(OUT.read_text(encoding="utf-8")) if OUT.is_file() else {"identifiers": []}
    added = sorted(set(new["identifiers"]) - set(old["identifiers"]))
    removed = sorted(set(old["identifiers"]) - set(new["identifiers"]))
    print(f"{len(new['identifiers'])} identifiers (torch {new['counts']['torch']}, dev set "
          f"{new['counts']['devset']} more); {len(added)} added, {len(removed)} removed")
    if args.write:
        OUT.write_text(json.dumps(new, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
