"""Shared fixtures. The site is built once per test session and shared by every test that
needs it (the site tests and the paste-page browser test).

The build is the real one: ``python -m mkdocs build --strict`` on the checkout's ``mkdocs.yml``
(``$SAMEDEVICE_ROOT`` selects another checkout, as everywhere in samedevice), into a temporary
folder. Under pytest-xdist every worker asks for it; the first builds while holding a lock, the
others read the recorded result.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

from samedevice.cases import repo_root
from tests.site.browser import CHROMIUM
from tests.site.sitebuild import BuiltSite, build


def _shared_tmp(tmp_path_factory: pytest.TempPathFactory, config: pytest.Config) -> Path:
    base = tmp_path_factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base  # xdist: shared by workers


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> BuiltSite:
    root = repo_root()
    shared = _shared_tmp(tmp_path_factory, request.config)
    record = shared / "samedevice-site.json"
    with open(shared / "samedevice-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.exists():
            data = json.loads(record.read_text())
            built = BuiltSite(root=Path(data["root"]), site=Path(data["site"]),
                              returncode=data["returncode"], log=data["log"], seconds=data["seconds"])
        else:
            built = build(root, shared / "samedevice-site")
            record.write_text(json.dumps({"root": str(built.root), "site": str(built.site),
                                          "returncode": built.returncode, "log": built.log,
                                          "seconds": built.seconds}))
    if built.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed ({built.returncode}):\n{built.log[-6000:]}",
                    pytrace=False)
    return built


@pytest.fixture(scope="module")
def site(request: pytest.FixtureRequest) -> tuple[Path, str]:
    """The built site: ``$SAMEDEVICE_SITE_DIR`` if set, else the session's one real build."""
    given = os.environ.get("SAMEDEVICE_SITE_DIR")
    if given:
        return Path(given), "given"
    return request.getfixturevalue("built_site").site, "mkdocs"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update"],
        )
        yield b
        b.close()
