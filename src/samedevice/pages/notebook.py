"""Laying a case out as a notebook, executing it, and checking it against its sources."""

from __future__ import annotations

import copy
import os
import re
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from samedevice.cases import Case, families, record_summary, template_titles

HIDDEN_TAG = "remove-cell"  # mkdocs-jupyter drops these cells from the page
RAISES_TAG = "raises-exception"  # nbclient/nbmake: this cell is expected to raise
# Why and Fix come straight after the error, so they are on the first screen; the programs that
# prove them follow.
SECTIONS = ("Error", "Why", "Fix", "Reproduce", "Fixed program", "Find it in your code",
            "Affected versions", "Upstream", "Last verified")

DEVICE_WORDS = {
    "sim": "the simulated accelerator answering to \"cuda\" (samedevice.sim, on a CPU)",
    "cuda": "a real CUDA GPU",
    "cpu": "a CPU-only PyTorch, unchanged",
}


def _era_label(spec: str) -> str:
    m = re.fullmatch(r">=\s*([\d.]+)", spec.strip())
    if m:
        return f"PyTorch {m.group(1)} and later"
    m = re.fullmatch(r">=\s*([\d.]+)\s*,\s*<\s*([\d.]+)", spec.strip())
    if m:
        low, high = m.groups()
        major, minor = [*high.split("."), "0"][:2]
        if int(minor) > 0:
            return f"PyTorch {low} to {major}.{int(minor) - 1}"
        return f"PyTorch {low} up to (not including) {major}.0"
    return f"PyTorch {spec}"


def _md(text: str) -> NotebookNode:
    return new_markdown_cell(text.strip() + "\n")


def _code(source: str, *tags: str) -> NotebookNode:
    cell = new_code_cell(source.rstrip() + "\n")
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def _hidden(source: str) -> NotebookNode:
    return _code(source, HIDDEN_TAG)


def _links(title: str, links: tuple) -> list[str]:
    return [f"- {title}: [{link.title}]({link.url})" for link in links]


def _upstream_release_lines(case: Case) -> list[str]:
    """The real releases, run by the opt-in upstream tier (``pytest -m upstream``)."""
    record = case.upstream_record()
    if not record:
        return []
    where = "the simulated accelerator" if record.get("device") == "sim" else "CUDA"
    lines = ["", f"The real `{record['package']}` releases, installed from PyPI and run on {where} "
             f"(PyTorch {record['torch']}, {record['date']}, `pytest -m upstream`):", "",
             *([record["how"], ""] if record.get("how") else []),
             "| Release | Expected | Observed |", "|---|---|---|"]
    for r in record["results"]:
        observed = r["observed"] + (f": `{r['message']}`" if r.get("message") else "")
        lines.append(f"| {r['version']} | {r['expected']} | {observed} |")
    return lines


def _record_line(record: dict[str, Any]) -> str:
    device = "simulated accelerator (CPU)" if record["device"] == "sim" else (
        f"CUDA, {record['gpu']}" if record["device"] == "cuda" else "CPU-only PyTorch")
    return f"| {record['date']} | {record['torch']} | {device} | {record['result']} | {_proved(record)} |"


def _proved(record: dict[str, Any]) -> str:
    """What a run proved, short: the documented message stands for itself on the page."""
    words = []
    for check in record.get("checks") or []:
        if check.startswith("broken.py raised"):
            check = "broken.py raised the documented error"
        words.append(check.replace("|", "\\|"))
    return "; ".join(words)


def _program(case: Case, path: Path, intro: str, raises: bool) -> list[NotebookNode]:
    """A snippet on the page: its code as a cell, or as a listing run with ``%run`` -- for
    programs that start several processes (their functions cannot live inside a notebook
    kernel; the ranks see the same simulated device), for environment bugs, and for programs
    that read files kept beside them (they find them through ``__file__``)."""
    source = path.read_text(encoding="utf-8")
    tags = (RAISES_TAG,) if raises else ()
    # files beside the programs (a checkpoint they load) are found through __file__
    beside = [p for p in path.parent.iterdir() if p.is_file() and p.name not in ("broken.py", "fixed.py")]
    if case.verify not in ("dist", "cpu") and not beside:
        return [_md(intro), _code(source, *tags)]
    # the kernel runs in cases/ (where nbmake starts it), so the script is one level up
    rel = "../" + path.relative_to(case.root).as_posix()
    how = "with its two processes" if case.verify == "dist" else "next to its files"
    listing = f"{intro}\n\n```python\n{source.rstrip()}\n```\n\nRun as a script, {how}:"
    return [_md(listing), _code(f"%run {rel}", *tags)]


def _check_cells(case: Case) -> list[NotebookNode]:
    """``samedevice check`` on the broken program, where one of its rules covers the case
    (the case file names the rules that flag it: ``check = [...]``)."""
    codes = list(case.check_rules)
    if not codes:
        return []
    rel = f"snippets/{case.slug}/broken.py"
    text = (f"Before anything runs, `samedevice check` finds it in the source "
            f"(rule{'s' * (len(codes) > 1)} {', '.join(codes)}; "
            f"`samedevice check {rel}` on the command line):")
    code = ("import samedevice.check\n"
            f"samedevice.check.run(\"../{rel}\", display={rel!r})")
    return [_md(text), _code(code)]


def _template_title(template: str) -> str:
    return template_titles().get(template, template)


def _reproduce(case: Case) -> str:
    """How a reader runs the broken program: from any folder (the package carries the programs)
    or, for a program that reads files kept beside it, from a checkout. A case of the
    environment runs under plain ``python``; the others on the simulated accelerator."""
    beside = [p for p in case.broken_path.parent.iterdir()
              if p.is_file() and p.name not in ("broken.py", "fixed.py")]
    if case.verify == "cpu":
        runner, where = "python", "on a machine without a GPU, where it fails as shown"
    else:
        gpus = f" --gpus {case.devices_needed}" if case.devices_needed > 1 else ""
        runner, where = f"samedevice run{gpus}", "on the simulated accelerator"
    if beside:
        return (f"in a checkout of samedevice (the program reads the files beside it), "
                f"`{runner} snippets/{case.slug}/broken.py` runs it {where}.")
    return f"`samedevice snippet {case.slug} --broken -o broken.py && {runner} broken.py` runs it {where}."


def build_cells(case: Case) -> list[NotebookNode]:
    fam = families()[case.family]
    err = case.error
    header = [
        f"# {case.title}",
        "",
        case.summary,
        "",
        f"**{case.id}** · family [{case.family} {fam['title']}](../../families/{case.family.lower()}/) · "
        + ("messages " if len(case.templates) > 1 else "message ")
        + ", ".join(f"[{t} {_template_title(t)}](../../messages/{t.lower()}/)" for t in case.templates),
    ]
    # An environment bug of CPU-only builds runs on one: the CPU wheel as it is, or a CUDA
    # wheel with its CUDA hidden (a CUDA wheel without a GPU says something else).
    setup = ("# this case needs no accelerator: it runs on a CPU-only PyTorch\nimport os\n\n"
             "os.environ[\"SAMEDEVICE_SIM\"] = \"cpu-build\"\n%load_ext samedevice"
             if case.verify == "cpu" else "%load_ext samedevice")
    if case.verify != "cpu" and case.devices_needed > 1:
        # the simulated machine (and the ranks the page spawns) get the GPUs the case needs
        setup = f"import os\n\nos.environ[\"SAMEDEVICE_GPUS\"] = \"{case.devices_needed}\"\n{setup}"
    cells = [_md("\n".join(header)), _hidden(setup)]

    error = ["## Error", ""]
    for m in err.messages:
        error += [f"{_era_label(m.torch)}:", "", "```text", f"{err.exception}: {m.text}", "```", ""]
    facts = []
    if err.op:
        facts.append(f"op `{err.op}`")
    if err.argument:
        facts.append(f"argument `{err.argument}`")
    if err.devices:
        facts.append("devices " + " and ".join(f"`{d}`" for d in err.devices))
    if facts:
        error.append("The message names " + ", ".join(facts) + ".")
    cells.append(_md("\n".join(error)))

    # Why and Fix come first, on the first screen: the programs and their output prove them below
    cells.append(_md("## Why\n\n" + case.why))
    cells.append(_md("## Fix\n\n" + case.fix))

    rel = f"snippets/{case.slug}"
    intro = f"## Reproduce\n\n`{rel}/broken.py`, a standalone program."
    if case.verify == "cpu":
        intro += " It needs no GPU: the bug is in the environment it runs in. To reproduce it: " + _reproduce(case)
    else:
        intro += (" It says `\"cuda\"` as the original code did. To reproduce it on any machine, "
                  "GPU or not: " + _reproduce(case))
    cells += _program(case, case.broken_path, intro, raises=True)
    cells.append(_hidden(
        "import samedevice.testing as _sd_testing\n"
        f"_sd_testing.check_case_error({case.slug!r})  # the documented error, word for word\n"
        "broken = _sd_testing.snapshot(globals())  # what the failing program left behind"
    ))
    cells += _program(case, case.fixed_path, f"## Fixed program\n\n`{rel}/fixed.py`, the same "
                      "program with the fix, runs to the end:", raises=False)
    find = "## Find it in your code\n\n" + case.find
    if case.find_code:
        find += ("\n\nBelow, `broken` holds the objects the failing program above left behind "
                 "(`broken.model` is its `model`).")
    cells.append(_md(find))
    cells += _check_cells(case)
    if case.find_code and case.find_raises:
        # nbclient accepts a raises-exception cell that raises nothing: check it did
        cells.append(_hidden("_sd_testing.forget_last_error()"))
        cells.append(_code(case.find_code, RAISES_TAG))
        cells.append(_hidden(f"_sd_testing.check_case_error({case.slug!r})  # raised again, with a note"))
    elif case.find_code:
        cells.append(_code(case.find_code))

    v = case.versions
    versions = ["## Affected versions", ""]
    if v.package or v.affected or v.fixed:
        versions += ["| | |", "|---|---|"]
        if v.package:
            versions.append(f"| Package | `{v.package}` |")
        if v.affected:
            versions.append(f"| Affected | {v.affected} |")
        if v.fixed:
            versions.append(f"| Fixed | {v.fixed} |")
        versions.append("")
    if v.notes:
        versions.append(v.notes)
    versions += _upstream_release_lines(case)
    cells.append(_md("\n".join(versions)))

    up = case.upstream
    upstream = ["## Upstream", "", f"Project: {up.project}", ""]
    upstream += _links("Issue", up.issue) + _links("Fix", up.fix)
    upstream += _links("Introduced by", up.introduced) + _links("Evidence", up.evidence)
    cells.append(_md("\n".join(upstream)))
    return cells


def _verification_cell(case: Case, executed: dict[str, Any]) -> NotebookNode:
    lines = [
        "## Last verified",
        "",
    ]
    records = case.records()
    if records:  # the newest record, in the words of the case index's "Last verified" column
        lines += [f"Last verified {record_summary(records[0])}.", ""]
    lines += [
        f"The outputs on this page were produced by running it on {DEVICE_WORDS[executed['device']]}, "
        f"PyTorch {executed['torch']}, on {executed['date']}.",
        "",
    ]
    if records:
        lines += ["`samedevice verify` records:", "", "| Date | PyTorch | Device | Result | What it proved |",
                  "|---|---|---|---|---|"]
        lines += [_record_line(r) for r in records]
    else:
        lines.append("No `samedevice verify --record` run is recorded for this case yet.")
    return _md("\n".join(lines))


def build_notebook(case: Case, executed: dict[str, Any]) -> NotebookNode:
    """The case page as an unexecuted notebook. ``executed`` describes the coming run."""
    nb = new_notebook()
    nb.cells = [*build_cells(case), _verification_cell(case, executed)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["samedevice"] = {
        "slug": case.slug,
        "id": case.id,
        "title": case.title,
        "summary": case.summary,
        "family": case.family,
        "templates": list(case.templates),
        "exception": case.error.exception,
        "messages": [{"torch": m.torch, "text": m.text} for m in case.error.messages],
        # the programs the page holds and ran, by digest: verify refuses a page whose programs
        # are no longer the files it names (Case.stale_programs)
        "programs": case.program_digests(),
        "executed": executed,
    }
    return nb


def cell_sources(nb: NotebookNode) -> list[tuple[str, str, tuple[str, ...]]]:
    """What the drift check compares: each cell's type, source and tags (not its outputs)."""
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", ()))) for c in nb.cells]


def executed_info(device: str) -> dict[str, Any]:
    import torch

    return {"device": device, "torch": torch.__version__, "date": date.today().isoformat(),
            "python": ".".join(map(str, sys.version_info[:3]))}


def check_notebook(case: Case) -> list[str]:
    """Problems between ``cases/<slug>.ipynb`` and what its sources generate now."""
    path = case.notebook_path
    if not path.exists():
        return [f"{path.name} is missing"]
    stored = nbformat.read(path, as_version=4)
    executed = stored.metadata.get("samedevice", {}).get("executed")
    if not executed:
        return [f"{path.name} has no execution record (metadata.samedevice.executed)"]
    fresh = build_notebook(case, executed)
    problems = []
    a, b = cell_sources(stored), cell_sources(fresh)
    if len(a) != len(b):
        problems.append(f"{path.name} has {len(a)} cells; its sources make {len(b)}")
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            problems.append(f"{path.name} cell {i} ({y[0]}) differs from its sources")
            break
    stale = case.stale_programs()
    if stale:
        problems.append(f"{path.name} was made from other programs than "
                        + " and ".join(f"snippets/{case.slug}/{n}" for n in stale) + " now hold")
    meta_a = {k: v for k, v in stored.metadata.get("samedevice", {}).items() if k not in ("executed", "programs")}
    meta_b = {k: v for k, v in fresh.metadata["samedevice"].items() if k not in ("executed", "programs")}
    if meta_a != meta_b:
        problems.append(f"{path.name} metadata differs from cases/{case.slug}.toml")
    for i, cell in enumerate(stored.cells):
        if cell.cell_type == "code" and HIDDEN_TAG not in cell.metadata.get("tags", ()) and not cell.get("outputs"):
            if RAISES_TAG in cell.metadata.get("tags", ()) or cell.source.strip():
                problems.append(f"{path.name} cell {i} has no stored output: execute it")
                break
    return problems


# -- normalising outputs -----------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
# PyTorch's C++ log lines (glog style) carry a timestamp and a thread id; spawn names PIDs
_LOG_PREFIX = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ", re.MULTILINE)
_PROCESS = re.compile(r"\b(process|pid) \d+", re.IGNORECASE)
# When one spawned rank fails, spawn SIGTERMs the ranks still running and logs it; whether a
# sibling is still running at that moment is a race, so the line may or may not appear.
_SPAWN_TERMINATING = re.compile(
    r"^[IWEF]\d{4} [^\n]*torch/multiprocessing/spawn\.py:\d+\] Terminating process \d+ "
    r"via signal \w+\n?", re.MULTILINE)

# c10d warns once per rank when `barrier()` picks the current device; a rank that another
# rank's failure terminates first may never print it, so it is not compared either.
_BARRIER_WARNING = re.compile(
    r"^[^\n]*torch/distributed/c10d_logger\.py:\d+: UserWarning: barrier\(\): using the device "
    r"under current context\.[^\n]*\n(?:  return func\(\*args, \*\*kwargs\)\n?)?", re.MULTILINE)


def _path_prefixes() -> list[tuple[str, str]]:
    """Machine-specific path prefixes in tracebacks and what the page shows instead."""
    prefixes = []
    for base in {sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix)}:
        lib = Path(base) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
        prefixes.append((str(lib / "site-packages") + "/", ".../site-packages/"))
        prefixes.append((str(lib) + "/", ".../lib/python/"))
    # site-packages folders reached another way (a .pth file naming another environment's)
    prefixes += [(entry.rstrip("/") + "/", ".../site-packages/") for entry in sys.path
                 if entry.rstrip("/").endswith("site-packages")]
    return sorted(prefixes, key=lambda p: -len(p[0]))


def _cell_files() -> re.Pattern[str]:
    """ipykernel compiles each cell into ``<tempdir>/ipykernel_<kernel pid>/<hash>.py`` (the
    hash is the cell's source); messages that name the file (torch.compile's "from user code:")
    show it as ``/tmp/ipykernel_<pid>/<hash>.py``."""
    tmp = {tempfile.gettempdir(), os.path.realpath(tempfile.gettempdir()), "/tmp"}
    dirs = "|".join(re.escape(d.rstrip("/")) for d in sorted(tmp, key=len, reverse=True))
    return re.compile(rf"(?:{dirs})/ipykernel_\d+/")


def normalise_text(text: str, root: Path) -> str:
    for prefix, repl in _path_prefixes():
        text = text.replace(prefix, repl)
    text = _cell_files().sub("/tmp/ipykernel_<pid>/", text)
    return text.replace(str(root) + "/", "")


def normalise_outputs(nb: NotebookNode, root: Path) -> NotebookNode:
    """Strip machine-specific paths from outputs (stored on the page and compared in tests)."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                out["traceback"] = [normalise_text(t, root) for t in out["traceback"]]
                out["evalue"] = normalise_text(out.get("evalue", ""), root)
            elif out.get("output_type") == "stream":
                out["text"] = normalise_text(out["text"], root)
            elif "data" in out and "text/plain" in out["data"]:
                out["data"]["text/plain"] = normalise_text(out["data"]["text/plain"], root)
    return nb


def _volatile(text: str) -> str:
    text = _ANSI.sub("", text)
    text = _ADDRESS.sub("0x…", text)
    text = _LOG_PREFIX.sub(r"\1<time> <thread> ", text)
    return _PROCESS.sub(r"\1 <n>", text)


def comparable_outputs(nb: NotebookNode) -> list[list[str]]:
    """Outputs reduced to plain text without colours or addresses, per code cell.

    A cell's stream outputs are joined per stream (stdout, then stderr) ahead of its other
    outputs: where a kernel cuts a stream into messages, and how stdout and stderr interleave,
    depends on flush timing, not on what the code printed."""
    result = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        streams = {"stdout": "", "stderr": ""}
        others = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                others.append("\n".join(out["traceback"]))
            elif out.get("output_type") == "stream":
                streams[out.get("name", "stdout")] = streams.get(out.get("name", "stdout"), "") + out["text"]
            elif "data" in out:
                others.append(out["data"].get("text/plain", ""))
        texts = [_BARRIER_WARNING.sub("", _SPAWN_TERMINATING.sub("", t)) for t in streams.values()]
        result.append([_volatile(t) for t in [*filter(None, texts), *others]])
    return result


# A printed decimal: `828.8501`, `-0.1180`, `2.1985e+00`, `0.33319538831710815` -- standing
# alone, so a version such as `2.13.0` or a name such as `v1.5` is text and compared exactly.
_DECIMAL = re.compile(r"(?<![\w.])-?\d+\.(\d+)(?:[eE]([+-]?\d+))?(?![\w.])")
# Float results differ in their last digits between CPUs (vector width, oneDNN kernel choice):
# a page generated on one machine and re-run on another prints `828.8501` vs `828.8502`. Equal
# means: the same text, and each printed decimal within two units of its last printed digit or
# 1e-4 relative -- far tighter than any wrong fix, which prints different numbers altogether.
_RELATIVE = 1e-4


def _close(a: re.Match, b: re.Match) -> bool:
    x, y = float(a.group(0)), float(b.group(0))
    unit = max(10.0 ** (int(m.group(2) or 0) - len(m.group(1))) for m in (a, b))
    return abs(x - y) <= max(2 * unit, _RELATIVE * max(abs(x), abs(y)))


def same_output(got: str, want: str) -> bool:
    """Whether a fresh run printed what the page shows, up to float noise between CPUs."""
    got_numbers, want_numbers = list(_DECIMAL.finditer(got)), list(_DECIMAL.finditer(want))
    if len(got_numbers) != len(want_numbers):
        return False

    def words(text: str) -> list[str]:
        # Tensor printing pads columns with spaces to the widest number, so runs of spaces
        # follow the digits; line breaks do not.
        return [re.sub(r" +", " ", part) for part in _DECIMAL.split(text)[::3]]

    return (words(got) == words(want)
            and all(_close(a, b) for a, b in zip(got_numbers, want_numbers, strict=True)))

