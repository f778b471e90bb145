"""The *Rules* page of ``samedevice check``, generated from its registry (Ruff's rule pages
are the model: what it finds, why it is a bug, an example, what to write instead)."""

from __future__ import annotations

from samedevice.check.registry import RULES

from .generated import RULES as RULES_PAGE
from .generated import _table, case_uri, cell, family_uri, front_matter, rel
from .sitedata import SiteData


def rules_page(data: SiteData) -> str:
    cases = {c.slug: c for c in data.cases}
    body = [
        front_matter(description="The rules of samedevice check, the static checker for PyTorch "
                                 "device bugs: what each finds, why it is a bug, what to write instead."),
        "# Rules of `samedevice check`",
        "",
        "`samedevice check PATH...` reads Python source (files, folders, or `-` for stdin) and "
        "reports the device bugs that are visible without running anything, one rule per root "
        "cause. It needs no GPU and does not import torch. Codes are grouped by family: `SD1xx` "
        "for F1, `SD2xx` for F2, …, `SD10xx` for F10.",
        "",
        "```console",
        "$ samedevice check src/",
        "src/model.py:42:13: SD401 a tensor factory without `device=` meets a tensor that follows "
        "the input: `torch.arange(...)` (…/families/f4/)",
        "```",
        "",
        "It exits with 1 when it finds something, 0 when the code is clean and 2 on bad usage "
        "or when the checker itself failed on a file (`SD999`, one line; the other files are "
        "still checked). A file that does not parse is one `SD000` line. Files are read as "
        "Python reads them (a UTF-8 BOM, a `coding:` line); notebooks (`.ipynb`) are checked "
        "as the script their code cells make, each finding placed in its cell "
        "(`nb.ipynb:cell 3:2:5`), with IPython's `%` and `!` lines left out. "
        "`--output-format json|github|sarif` (or `--format`) prints for tools and CI (`github` "
        "annotates the pull request), `--statistics` counts findings per rule, `--explain SD401` "
        "prints a rule's page, `--exit-zero` reports without failing, "
        "`--select SD2,SD401`, `--extend-select` and `--ignore SD1001` choose rules, `# noqa: SD201` (or a bare "
        "`# noqa`; `# noqa:` naming no code silences nothing) on a line silences it, and the "
        "nearest `pyproject.toml` can hold the same choices:",
        "",
        "```toml",
        "[tool.samedevice]",
        'select = ["ALL"]         # every rule (the default); or codes and prefixes: "SD2"',
        'ignore = ["SD1001"]',
        'exclude = ["tests/fixtures/*"]   # relative to this pyproject.toml, or a file name',
        'per-file-ignores = { "tests/*" = ["SD4"] }',
        "```",
        "",
        "As a [pre-commit](https://pre-commit.com/) hook, in your `.pre-commit-config.yaml`. "
        "With samedevice installed in the environment that runs pre-commit (today: from a "
        "checkout or a wheel, see Install), a local hook:",
        "",
        "```yaml",
        "- repo: local",
        "  hooks:",
        "    - id: samedevice-check",
        "      name: samedevice check",
        "      entry: samedevice check",
        "      language: system",
        "      types_or: [python, pyi]",
        "```",
        "",
        "Once a release is tagged, pre-commit can install it itself from the repository's "
        "`.pre-commit-hooks.yaml`:",
        "",
        "```yaml",
        "- repo: https://github.com/samedevice/samedevice",
        "  rev: v0.1.0",
        "  hooks:",
        "    - id: samedevice-check",
        "```",
        "",
        "Precision comes first: a rule that would fire on correct code is not shipped. Each "
        "rule's *Limits* say what it cannot see; `tests/check` runs every rule over PyTorch's own "
        "`torch/nn` and `torch/optim` and requires every finding there to be reviewed.",
        "",
        _table(["Code", "Name", "Family", "Finds"], [
            [f"[{r.code}](#{r.code.lower()})", f"`{r.name}`",
             f"[{r.family}]({rel(RULES_PAGE, family_uri(r.family))})", cell(r.summary)]
            for r in RULES]),
        "",
    ]
    for r in RULES:
        fam = data.families[r.family]
        body += [
            f"## {r.code} `{r.name}` {{ #{r.code.lower()} }}",
            "",
            f"Family [{r.family} {fam.title}]({rel(RULES_PAGE, family_uri(r.family))}).",
            "",
            "**What it finds.** " + r.summary[0].upper() + r.summary[1:] + ".",
            "",
            "**Why it is a bug.** " + r.why,
            "",
            "**Example**",
            "",
            "```python",
            r.example.rstrip(),
            "```",
            "",
            "**Use instead**",
            "",
            "```python",
            r.instead.rstrip(),
            "```",
            "",
        ]
        if r.limits:
            body += ["**Limits.** " + r.limits, ""]
        known = [c for c in cases.values() if r.code in c.check_rules]
        if known:
            body += ["**Cases it comes from:** " + ", ".join(
                f"[{c.id} {cell(c.title)}]({rel(RULES_PAGE, case_uri(c))})" for c in known) + ".", ""]
    return "\n".join(body) + "\n"
