"""The case registry: every fact about a case, read from the case's own files.

A case is ``cases/<slug>.toml`` (facts and prose), ``snippets/<slug>/broken.py`` and
``snippets/<slug>/fixed.py`` (the programs), ``cases/<slug>.ipynb`` (the page, generated from
those by ``samedevice notebook``) and ``cases/<slug>.verified.json`` (verification records,
written by ``samedevice verify --record``). The site, ``explain``, ``verify``, the indexes and
the tests all read cases through this module; nothing else keeps a list of cases.

This module must stay importable without torch: ``samedevice explain`` uses it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

FAMILY_IDS = tuple(f"F{i}" for i in range(1, 11))
TEMPLATE_IDS = tuple(f"T{i}" for i in range(1, 14))
# sim: one process on the simulated accelerator; dist: several processes (torch.distributed);
# cpu: the bug needs no accelerator (environment bugs); gpu-only: cannot be shown without one.
VERIFY_MODES = ("sim", "dist", "cpu", "gpu-only")
PAGE_SECTIONS = ("why", "fix", "find")


class CaseError(ValueError):
    """A case file is missing or malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Message:
    """One era's text of the case's error. ``torch`` is a version range like ``>=2.8``."""

    torch: str
    text: str

    def applies_to(self, version: str) -> bool:
        return version_in(version, self.torch)


# torch.compile's errors end with Dynamo's account of where tracing stopped: "from user code:"
# and the user's frames (file paths: the program's, a notebook cell's temporary file named after
# the kernel's pid, site-packages), then a hint about TORCHDYNAMO_VERBOSE (absent when it is set;
# alone when there are no user frames). That trailer depends on where the code ran, so a case
# records, and every comparison of a case's message takes, the text before it.
_DYNAMO_TRAILER = re.compile(
    r"\n\n(?:from user code:\n|Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace)")


def case_message_text(text: str) -> str:
    """The part of an error message that a case's ``error.messages`` records, word for word:
    the message stripped, without Dynamo's environment-dependent trailer."""
    trailer = _DYNAMO_TRAILER.search(text)
    return (text[:trailer.start()] if trailer else text).strip()


@dataclass(frozen=True)
class ExpectedError:
    exception: str
    template: str
    op: str
    argument: str
    devices: tuple[str, ...]
    messages: tuple[Message, ...]

    def message_for(self, torch_version: str) -> Message | None:
        for m in self.messages:
            if m.applies_to(torch_version):
                return m
        return None


@dataclass(frozen=True)
class Link:
    title: str
    url: str


@dataclass(frozen=True)
class Upstream:
    project: str
    issue: tuple[Link, ...]
    fix: tuple[Link, ...]
    introduced: tuple[Link, ...]
    evidence: tuple[Link, ...]


@dataclass(frozen=True)
class Versions:
    package: str
    affected: str
    fixed: str
    notes: str


@dataclass(frozen=True)
class Case:
    slug: str
    id: str
    title: str
    summary: str
    family: str
    templates: tuple[str, ...]
    verify: str
    verify_reason: str
    devices_needed: int
    error: ExpectedError
    upstream: Upstream
    versions: Versions
    why: str
    fix: str
    find: str
    find_code: str
    find_raises: bool
    library_frames: tuple[str, ...]
    # what users were doing when they hit it, in the dev set's vocabulary
    # (benchmarks/devset/reports.jsonl "situation"); read by benchmarks/coverage.py
    situations: tuple[str, ...]
    # The `samedevice check` rules that must flag broken.py (and nothing else may flag it).
    check_rules: tuple[str, ...]
    root: Path = field(repr=False)

    @property
    def toml_path(self) -> Path:
        return self.root / "cases" / f"{self.slug}.toml"

    @property
    def notebook_path(self) -> Path:
        return self.root / "cases" / f"{self.slug}.ipynb"

    @property
    def record_path(self) -> Path:
        return self.root / "cases" / f"{self.slug}.verified.json"

    @property
    def upstream_record_path(self) -> Path:
        return self.root / "cases" / f"{self.slug}.upstream.json"

    def upstream_record(self) -> dict | None:
        """The opt-in upstream tier's result (``pytest -m upstream``): the real library's buggy
        and fixed releases run on the simulated accelerator. None when never recorded."""
        return read_json_object(self.upstream_record_path)

    @property
    def broken_path(self) -> Path:
        return self.root / "snippets" / self.slug / "broken.py"

    @property
    def fixed_path(self) -> Path:
        return self.root / "snippets" / self.slug / "fixed.py"

    def program_digests(self) -> dict[str, str]:
        """sha256 of ``broken.py`` and ``fixed.py`` as they are on disk now. The case page
        records those it was made from (``stale_programs``)."""
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                for p in (self.broken_path, self.fixed_path) if p.exists()}

    def stale_programs(self) -> list[str]:
        """The programs (``broken.py``, ``fixed.py``) that changed since the case page was made
        from them, by the digests the page records (every program when it records none).
        Empty when the page is in step with its files, or there is no page."""
        try:
            page = json.loads(self.notebook_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError):
            return ["broken.py", "fixed.py"]  # an unreadable page proves nothing
        recorded = (page.get("metadata", {}).get("samedevice") or {}).get("programs") or {}
        now = self.program_digests()
        return [name for name in ("broken.py", "fixed.py") if recorded.get(name) != now.get(name)]

    @property
    def page_url(self) -> str:
        """Site-relative URL of the case page."""
        return f"cases/{self.slug}/"

    def records(self) -> list[dict]:
        """Verification records, newest first (an empty list when never recorded)."""
        data = read_json_object(self.record_path)
        if data is None:
            return []
        records = data.get("records", [])
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise CaseError(f"{self.record_path}: records: must be a list of tables")
        return sorted(records, key=lambda r: str(r.get("date", "")), reverse=True)

    def to_dict(self, records: bool = True) -> dict:
        """The JSON shape of ``samedevice cases --json`` (``records=False``: ``verified`` and
        ``upstream_releases`` null, for a case whose record files do not read)."""
        return {
            "slug": self.slug,
            "id": self.id,
            "title": self.title,
            "summary": self.summary,
            "family": self.family,
            "templates": list(self.templates),
            "verify": self.verify,
            "verify_reason": self.verify_reason,
            "devices_needed": self.devices_needed,
            "error": {
                "exception": self.error.exception,
                "template": self.error.template,
                "op": self.error.op,
                "argument": self.error.argument,
                "devices": list(self.error.devices),
                "messages": [{"torch": m.torch, "text": m.text} for m in self.error.messages],
            },
            "upstream": {
                "project": self.upstream.project,
                **{
                    kind: [{"title": x.title, "url": x.url} for x in getattr(self.upstream, kind)]
                    for kind in ("issue", "fix", "introduced", "evidence")
                },
            },
            "versions": {
                "package": self.versions.package,
                "affected": self.versions.affected,
                "fixed": self.versions.fixed,
                "notes": self.versions.notes,
            },
            "library_frames": list(self.library_frames),
            "situations": list(self.situations),
            "check": list(self.check_rules),
            "page": self.page_url,
            "verified": self.records() if records else None,
            "upstream_releases": self.upstream_record() if records else None,
        }


def read_json_object(path: Path) -> dict | None:
    """A record file's JSON object; None when there is no file; a one-line CaseError when it
    cannot be read or is not a JSON object."""
    if not path.exists() and not path.is_symlink():
        return None
    text = read_text_file(path)
    try:
        data = json.loads(text)
    except RecursionError:
        raise CaseError(f"{path}: not valid JSON (nested too deeply to read)") from None
    except ValueError as e:
        raise CaseError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise CaseError(f"{path}: must hold a JSON object, not {type(data).__name__}")
    return data


# -- locating the repository -------------------------------------------------------------------


def repo_root() -> Path:
    """The checkout that holds ``cases/`` (``$SAMEDEVICE_ROOT`` overrides), else the copy of the
    case files an installed wheel carries."""
    env = os.environ.get("SAMEDEVICE_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "cases").is_dir() and (parent / "snippets").is_dir():
            return parent
    cwd = Path.cwd()
    for parent in (cwd, *cwd.parents):
        if (parent / "cases").is_dir() and (parent / "snippets").is_dir():
            return parent
    bundled = _bundled_root()
    if bundled is not None:
        return bundled
    raise CaseError(
        "cannot find the case files: this install carries none (an editable install reads the "
        "checkout); run from the samedevice checkout or set SAMEDEVICE_ROOT"
    )


def _bundled_root() -> Path | None:
    """The case files a wheel carries (copied from the checkout at build time, see _bundle.py).

    Used only when no checkout is found: an author's checkout always wins."""
    from importlib.resources import files

    from samedevice._bundle import BUNDLE_DIR

    folder = files("samedevice") / BUNDLE_DIR
    if not (folder / "cases").is_dir():
        return None
    return Path(str(folder))


# -- parsing -----------------------------------------------------------------------------------


def _links(path: Path, value: object, key: str) -> tuple[Link, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    links = []
    for item in items:
        if isinstance(item, str):
            links.append(Link(title=_title_from_url(item), url=item))
        elif isinstance(item, dict) and "url" in item:
            links.append(Link(title=str(item.get("title") or _title_from_url(item["url"])), url=str(item["url"])))
        else:
            raise CaseError(f"{path}: upstream.{key} entries must be URLs or {{title, url}} tables")
        if not links[-1].url.startswith("https://"):
            raise CaseError(f"{path}: upstream.{key} link {links[-1].url!r} is not an https URL")
    return tuple(links)


def _title_from_url(url: str) -> str:
    m = re.match(r"https://github\.com/([^/]+/[^/]+)/(issues|pull|commit)/(\w+)", url)
    if m:
        repo, kind, ref = m.groups()
        return f"{repo}@{ref[:8]}" if kind == "commit" else f"{repo}#{ref}"
    return url


def _require(path: Path, table: dict, key: str, kind: type = str):
    if key not in table:
        raise CaseError(f"{path}: missing required field {key!r}")
    value = table[key]
    if not isinstance(value, kind):
        raise CaseError(f"{path}: field {key!r} must be a {kind.__name__}")
    if kind is str and not value.strip():
        raise CaseError(f"{path}: field {key!r} is empty")
    return value


@cache
def _rule_codes() -> frozenset[str]:
    from samedevice.check.registry import BY_CODE  # the checker's own registry, never a copy

    return frozenset(BY_CODE)


CASE_SCHEMA = Path(__file__).parent / "data" / "case.schema.json"


@cache
def _validator():
    # jsonschema is imported here, not at the top: explain's fast path never parses case files
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(CASE_SCHEMA.read_text(encoding="utf-8")))


def schema_problems(path: Path, data: dict) -> list[str]:
    """One line per malformed value of a case file (data/case.schema.json), naming the field."""
    lines = []
    errors = sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    for e in errors:
        where = ".".join(str(p) for p in e.absolute_path)
        if e.validator == "additionalProperties":
            known = sorted(e.schema.get("properties", {}))
            for key in sorted(set(e.instance) - set(known)):
                near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
                hint = f"; did you mean {near[0]!r}?" if near else f" (known: {', '.join(known)})"
                lines.append(f"{path}: {where + '.' if where else ''}{key}: unknown key{hint}")
            continue
        if e.validator == "required":
            missing = e.message.split("'")[1] if "'" in e.message else e.message
            where = f"{where}.{missing}" if where else missing
            lines.append(f"{path}: {where}: missing required field")
            continue
        value = e.instance if not isinstance(e.instance, str) or len(e.instance) <= 60 else e.instance[:57] + "..."
        wanted = e.schema.get("description") or _expected(e)
        lines.append(f"{path}: {where or '(top level)'}: {value!r} is not valid ({wanted})")
    return lines


def _expected(e) -> str:
    if e.validator == "type":
        return f"must be {'an' if str(e.validator_value)[0] in 'aeiou' else 'a'} {e.validator_value}"
    if e.validator == "enum":
        return "must be one of " + ", ".join(map(str, e.validator_value))
    if e.validator == "pattern":
        return "must match " + e.validator_value
    if e.validator in ("minimum", "minItems", "minLength"):
        return f"{e.validator} {e.validator_value}"
    if e.validator == "oneOf":
        return "must be an https URL, a {title, url} table or a list of them"
    return e.message


def read_text_file(path: Path) -> str:
    """A case's file as text, or a CaseError that says in one line why it cannot be read: a
    directory, a link loop, no permission, bytes that are not UTF-8."""
    try:
        return path.read_bytes().decode("utf-8")
    except IsADirectoryError:
        raise CaseError(f"{path}: is a folder, not a file") from None
    except OSError as e:
        raise CaseError(f"{path}: cannot be read ({e.strerror or e})") from None
    except UnicodeDecodeError as e:
        raise CaseError(f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})") from None


def _read_toml(path: Path) -> dict:
    text = read_text_file(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CaseError(f"{path}: invalid TOML ({e})") from None
    except RecursionError:  # tomllib recurses once per nested array or table
        raise CaseError(f"{path}: invalid TOML (nested too deeply to read)") from None


def parse_case(path: Path, root: Path) -> Case:
    data = _read_toml(path)
    problems = schema_problems(path, data)
    if problems:
        raise CaseError("\n".join(problems))
    slug = path.stem
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", slug):
        raise CaseError(f"{path}: the file name must be a lowercase-hyphenated slug")
    case_id = _require(path, data, "id")
    if not re.fullmatch(r"SD-\d{4}", case_id):
        raise CaseError(f"{path}: id {case_id!r} must look like SD-0001")
    family = _require(path, data, "family")
    if family not in FAMILY_IDS:
        raise CaseError(f"{path}: family {family!r} is not one of {', '.join(FAMILY_IDS)}")
    templates = tuple(_require(path, data, "templates", list))
    for t in templates:
        if t not in TEMPLATE_IDS:
            raise CaseError(f"{path}: template {t!r} is not one of T1..T13")
    verify = data.get("verify", "sim")
    if verify not in VERIFY_MODES:
        raise CaseError(f"{path}: verify must be one of {', '.join(VERIFY_MODES)}")
    verify_reason = str(data.get("verify_reason", ""))
    if verify == "gpu-only" and not verify_reason:
        raise CaseError(f"{path}: a gpu-only case must say why in verify_reason")

    err = _require(path, data, "error", dict)
    messages = tuple(
        Message(torch=_require(path, m, "torch"), text=_require(path, m, "text"))
        for m in _require(path, err, "messages", list)
    )
    if not messages:
        raise CaseError(f"{path}: error.messages must list at least one message")
    error = ExpectedError(
        exception=_require(path, err, "exception"),
        template=_require(path, err, "template"),
        op=str(err.get("op", "")),
        argument=str(err.get("argument", "")),
        devices=tuple(err.get("devices", ())),
        messages=messages,
    )
    if error.template not in templates:
        raise CaseError(f"{path}: error.template {error.template} must be listed in templates")

    up = _require(path, data, "upstream", dict)
    upstream = Upstream(
        project=_require(path, up, "project"),
        issue=_links(path, up.get("issue"), "issue"),
        fix=_links(path, up.get("fix"), "fix"),
        introduced=_links(path, up.get("introduced"), "introduced"),
        evidence=_links(path, up.get("evidence"), "evidence"),
    )
    if not (upstream.issue or upstream.fix or upstream.evidence):
        raise CaseError(f"{path}: upstream needs at least one issue, fix or evidence link")
    ver = data.get("versions", {})
    versions = Versions(
        package=str(ver.get("package", "")),
        affected=str(ver.get("affected", "")),
        fixed=str(ver.get("fixed", "")),
        notes=str(ver.get("notes", "")),
    )
    # situations and check: shapes validated by case.schema.json
    situations = tuple(data.get("situations", ()))
    check_rules = tuple(data.get("check", ()))
    if unknown := [code for code in check_rules if code not in _rule_codes()]:
        raise CaseError(f"{path}: check: {', '.join(map(repr, unknown))} is not a rule of samedevice check "
                        "(`samedevice check --list-rules` lists them)")
    page = _require(path, data, "page", dict)
    for section in PAGE_SECTIONS:
        _require(path, page, section)
    return Case(
        slug=slug,
        id=case_id,
        title=_require(path, data, "title"),
        summary=_require(path, data, "summary"),
        family=family,
        templates=templates,
        verify=verify,
        verify_reason=verify_reason,
        devices_needed=int(data.get("devices_needed", 1)),
        error=error,
        upstream=upstream,
        versions=versions,
        why=page["why"].strip(),
        fix=page["fix"].strip(),
        find=page["find"].strip(),
        find_code=str(page.get("find_code", "")).strip(),
        find_raises=bool(page.get("find_raises", False)),
        library_frames=tuple(data.get("library_frames", ())),
        situations=situations,
        check_rules=check_rules,
        root=root,
    )


def _program_problem(case: Case) -> str | None:
    """Why one of the case's programs cannot serve (missing, unreadable, not UTF-8), or None."""
    for p in (case.broken_path, case.fixed_path):
        if not p.exists() and not p.is_symlink():
            return f"{case.toml_path}: missing {p.relative_to(case.root)}"
        try:
            read_text_file(p)
        except CaseError as e:
            return str(e)
    return None


def parse_cases(root: Path) -> tuple[list[Case], list[str]]:
    """Every case that reads, and one line per problem of those that do not (each malformed value
    of a case file, a second file with an id already taken, a missing or unreadable program).
    A case with a problem is left out; the others are unaffected."""
    cases, problems = [], []
    seen: dict[str, str] = {}
    for p in sorted((root / "cases").glob("*.toml")):
        try:
            case = parse_case(p, root)
        except CaseError as e:
            problems.extend(str(e).split("\n"))
            continue
        if case.id in seen:
            problems.append(f"{p}: id {case.id} is already used by {seen[case.id]}")
            continue
        if (problem := _program_problem(case)) is not None:
            problems.append(problem)
            continue
        seen[case.id] = case.slug
        cases.append(case)
    return cases, problems


@dataclass(frozen=True)
class Registry:
    """The cases of one checkout that read, ordered by id, and the problems of those that do not."""

    cases: tuple[Case, ...]
    problems: tuple[str, ...]


@cache
def read_registry(root: Path | None = None) -> Registry:
    """Every case that reads, and one line per problem: for the commands, which go on with the
    good cases and report the rest (``load_cases`` is the strict form)."""
    cases, problems = parse_cases((root or repo_root()).resolve())
    return Registry(tuple(sorted(cases, key=lambda c: c.id)), tuple(problems))


def _load(root: Path) -> tuple[Case, ...]:
    registry = read_registry(root)
    if registry.problems:
        # every malformed value of every file, one line each (not only the first one found)
        raise CaseError("\n".join(registry.problems))
    return registry.cases


def select(slugs: Sequence[str] = (), root: Path | None = None) -> tuple[list[Case], tuple[str, ...]]:
    """What a command works on: the cases named (their own problems raise CaseError), else every
    case that reads; and the problems of the case data it left out, one line each, to report."""
    if slugs:
        return [get_case(s, root) for s in slugs], ()
    registry = read_registry((root or repo_root()).resolve())
    return list(registry.cases), registry.problems


def reload() -> None:
    """Forget cached case files (``mkdocs serve`` calls this before each rebuild)."""
    read_registry.cache_clear()
    families.cache_clear()


def load_cases(root: Path | None = None) -> tuple[Case, ...]:
    """All cases, ordered by id."""
    return _load((root or repo_root()).resolve())


def get_case(slug: str, root: Path | None = None) -> Case:
    """The case named by slug or id. Other case files' problems do not stand in its way; its own
    file's problem is the error."""
    registry = read_registry((root or repo_root()).resolve())
    for c in registry.cases:
        if c.slug == slug or c.id == slug:
            return c
    own = [p for p in registry.problems if f"/cases/{slug}." in p or f"/snippets/{slug}/" in p]
    if own:
        raise CaseError(own[0] + (f" (and {len(own) - 1} more problem(s))" if len(own) > 1 else ""))
    cases = registry.cases
    # the nearest names, by slug or by the words it shares ("dino" finds lightly-dino-loss-center)
    slugs = [c.slug for c in cases]
    near = difflib.get_close_matches(slug, slugs, n=3, cutoff=0.6)
    words = {w for w in re.split(r"[-_\s]+", slug.lower()) if len(w) > 2}
    near += [s for s in slugs if s not in near and words and words <= set(s.split("-"))][: 3 - len(near)]
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    raise CaseError(f"no case named {slug!r}{hint} (`samedevice cases` lists all {len(cases)})")


# -- version ranges (no dependency on `packaging`: explain must start fast) --------------------


def _version_tuple(v: str) -> tuple[int, ...]:
    core = re.match(r"\d+(\.\d+)*", v.strip())
    if not core:
        raise ValueError(f"not a version: {v!r}")
    return tuple(int(x) for x in core.group(0).split("."))


def version_in(version: str, spec: str) -> bool:
    """``version_in("2.13.0+cpu", ">=2.8")`` -- comma-separated clauses, all must hold."""
    v = _version_tuple(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = re.fullmatch(r"(>=|<=|==|!=|>|<)\s*([\d.]+)", clause)
        if not m:
            raise ValueError(f"unsupported version clause {clause!r}")
        op, bound = m.group(1), _version_tuple(m.group(2))
        n = max(len(v), len(bound))
        a, b = v + (0,) * (n - len(v)), bound + (0,) * (n - len(bound))
        ok = {">=": a >= b, "<=": a <= b, "==": a == b, "!=": a != b, ">": a > b, "<": a < b}[op]
        if not ok:
            return False
    return True


@cache
def families() -> dict[str, dict]:
    path = Path(__file__).parent / "data" / "families.toml"
    return tomllib.loads(path.read_text(encoding="utf-8"))


RECORD_DEVICE_WORDS = {"sim": "simulated accelerator", "cuda": "CUDA", "cpu": "CPU-only PyTorch"}


def record_summary(record: dict) -> str:
    """One verification record in a line, the same words on the case page and in every index:
    ``2026-11-28, torch 2.11.0+cu130, CUDA (NVIDIA H200): pass``."""
    device = RECORD_DEVICE_WORDS.get(str(record.get("device")), str(record.get("device")))
    if record.get("gpu"):
        device += f" ({record['gpu']})"
    return f"{record.get('date', '?')}, torch {record.get('torch', '?')}, {device}: {record.get('result', '?')}"


@cache
def template_titles() -> dict[str, str]:
    """``{"T1": "...", ...}``: each message template's title, from the message catalogue."""
    path = Path(__file__).parent / "data" / "templates.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {k: str(v.get("title", k)) for k, v in data.items() if isinstance(v, dict) and k[:1] == "T"}
