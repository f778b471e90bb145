"""A JSON copy of the knowledge base, so a cold ``samedevice explain`` skips TOML and the registry.

Parsing the catalogue, the rules and 20+ case files, and running the parser over every case's
documented messages, costs more than the 150 ms a cold run may take in all. The result is plain
data, so it is stored as JSON next to the user's other caches and reused while its sources are
unchanged: the key covers the size and modification time of every file it was built from,
including explain's own code, so an edit anywhere rebuilds it. A cache that cannot be written
(read-only home, sandbox) is simply not used.
"""

from __future__ import annotations

import json
import os

# os.path rather than pathlib, and a plain key string rather than hashlib: on the fast path
# every import counts (pathlib pulls in urllib and ipaddress).
HERE = os.path.dirname(os.path.abspath(__file__))
# Bump when the shape of the knowledge dict changes (the browser data carries it too).
SCHEMA = 3
PACKAGE = os.path.dirname(HERE)


def cache_file(root: str | None = None) -> str:
    """The cache of this install reading the cases at ``root``: one file per (package, cases)
    pair, so two installs (a venv and a checkout, two projects' venvs) keep theirs instead of
    evicting each other's on every run."""
    from samedevice._atomic import cache_dir

    env = cache_dir()
    import zlib  # built into the interpreter: no import cost on the fast path

    install = zlib.crc32(f"{PACKAGE}|{root}".encode("utf-8", "surrogateescape"))
    return os.path.join(env, f"explain-knowledge-{install:08x}.json")


def case_root() -> str | None:
    """The checkout holding cases/ (else a wheel's copy), found as samedevice.cases.repo_root does.

    Repeated here, not imported: importing the registry (dataclasses, its TOML parser) is what
    the cache exists to avoid on the fast path. A wrong answer only costs a rebuild.
    """
    env = os.environ.get("SAMEDEVICE_ROOT")
    if env:
        return os.path.abspath(env)
    cwd = os.getcwd()
    for start in (HERE, cwd):
        parent = start
        while True:
            if os.path.isdir(os.path.join(parent, "cases")) and os.path.isdir(os.path.join(parent, "snippets")):
                return parent
            up = os.path.dirname(parent)
            if up == parent:
                break
            parent = up
    from samedevice._bundle import bundled_root  # an installed wheel's copy of the case files

    return bundled_root()


def _listing(folder: str, suffix: str, depth: int = 1) -> list[str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for name in names:
        path = os.path.join(folder, name)
        if depth > 1 and os.path.isdir(path):
            out += _listing(path, suffix, depth - 1)
        elif name.endswith(suffix):
            out.append(path)
    return out


def cache_key(root: str | None) -> str:
    """Every source file with its size and modification time, as one string."""
    files = [*_listing(HERE, ".py"), os.path.join(HERE, "rules.toml"), os.path.join(HERE, "prior.toml")]
    files += [*_listing(os.path.join(PACKAGE, "data"), ".toml"), os.path.join(PACKAGE, "data", "case.schema.json"),
              os.path.join(PACKAGE, "data", "common_identifiers.json")]
    files.append(os.path.join(PACKAGE, "cases.py"))
    files.append(os.path.join(PACKAGE, "check", "registry.py"))  # a case names its rules from it
    if root is not None:
        files += _listing(os.path.join(root, "cases"), ".toml")
        files += _listing(os.path.join(root, "snippets"), ".py", depth=2)  # the registry requires them
    parts = [str(root)]
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            continue
        parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def knowledge() -> dict:
    """The knowledge base, from the cache when it is current, else built (and cached)."""
    if os.environ.get("SAMEDEVICE_NO_CACHE"):
        from samedevice.explain.knowledge import build

        return build()
    root = case_root()
    key = f"{SCHEMA}|{cache_key(root)}"
    path = cache_file(root)
    try:
        with open(path, encoding="utf-8") as f:
            stored = json.load(f)
        if stored.get("key") == key:
            return stored["kb"]
    except (OSError, ValueError, AttributeError):
        pass
    from pathlib import Path

    from samedevice._atomic import write_text
    from samedevice.explain.knowledge import build

    kb = build(Path(root) if root else None)
    write_text(path, json.dumps({"key": key, "kb": kb}, separators=(",", ":")))
    return kb
