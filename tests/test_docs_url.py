"""Every link samedevice prints is built from one base: the published site unless asked."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from samedevice.cases import repo_root
from samedevice.docs_url import DEFAULT_DOCS_URL, docs_url, page_url

PASTE = b"RuntimeError: No backend type associated with device type cpu\n"


def _explain(*args: str, env: dict | None = None) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("SAMEDEVICE_DOCS_URL", "SAMEDEVICE_SITE_URL")}
    out = subprocess.run([sys.executable, "-m", "samedevice", "explain", *args], input=PASTE,
                         capture_output=True, env={**clean, **(env or {})}, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode()


def test_mkdocs_site_url_is_the_default_base():
    text = (repo_root() / "mkdocs.yml").read_text()
    (site_url,) = re.findall(r"^site_url:\s*(\S+)\s*$", text, re.M)
    assert site_url == DEFAULT_DOCS_URL
    assert DEFAULT_DOCS_URL.startswith("https://") and DEFAULT_DOCS_URL.endswith("/")


def test_the_environment_moves_the_base(monkeypatch):
    monkeypatch.delenv("SAMEDEVICE_SITE_URL", raising=False)
    monkeypatch.delenv("SAMEDEVICE_DOCS_URL", raising=False)
    assert page_url("families/f2/") == DEFAULT_DOCS_URL + "families/f2/"
    monkeypatch.setenv("SAMEDEVICE_DOCS_URL", "http://127.0.0.1:8000/samedevice")
    assert docs_url() == "http://127.0.0.1:8000/samedevice/"
    assert page_url("/families/f2/") == "http://127.0.0.1:8000/samedevice/families/f2/"


def test_explain_links_point_at_the_published_site_by_default():
    out = _explain()
    assert f"{DEFAULT_DOCS_URL}families/f" in out
    assert "127.0.0.1" not in out


def test_docs_url_flag_and_variable_point_explain_at_a_local_serve():
    local = "http://127.0.0.1:8000/samedevice/"
    by_flag = _explain("--docs-url", local)
    assert f"{local}families/f" in by_flag and DEFAULT_DOCS_URL not in by_flag
    assert _explain(env={"SAMEDEVICE_DOCS_URL": local}) == by_flag
