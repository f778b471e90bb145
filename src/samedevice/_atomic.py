"""Writing a cache file whole or not at all, and where the user keeps caches."""

from __future__ import annotations

import os


def cache_dir() -> str:
    """``$SAMEDEVICE_CACHE_DIR``, else ``$XDG_CACHE_HOME/samedevice``, else ``~/.cache/samedevice``."""
    env = os.environ.get("SAMEDEVICE_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "samedevice")


def write_text(path: str, text: str) -> bool:
    """Write ``text`` to ``path`` through a temporary file beside it and a rename, so a reader
    never sees half a file; whatever stops the write (a full disk, a read-only folder, Ctrl-C)
    leaves no temporary file behind. False when it could not be written."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        return True
    except OSError:
        return False
    finally:
        if os.path.lexists(tmp):
            try:
                os.remove(tmp)
            except OSError:
                pass
