"""The data the browser runs on: the Python knowledge base in JavaScript's regex spelling."""

from __future__ import annotations

import json
import re

from samedevice.explain.browser import build_data, write_assets


def test_data_is_the_knowledge_base_with_js_groups(kb):
    data = build_data()
    assert data["schema"] == kb["schema"]
    assert [f["id"] for f in data["forms"]] == [f["id"] for f in kb["forms"]]
    assert [c["slug"] for c in data["cases"]] == [c["slug"] for c in kb["cases"]]
    text = json.dumps(data)
    assert "(?P<" not in text and "(?<argument>" in text
    form = next(f for f in data["forms"] if f["id"] == "t2-got-is-on")
    original = next(f for f in kb["forms"] if f["id"] == "t2-got-is-on")
    assert form["regex"] == original["regex"].replace("(?P<", "(?<")


def test_write_assets(tmp_path):
    written = write_assets(tmp_path)
    folder = tmp_path / "javascripts"
    assert folder / "explain-data.json" in written and folder / "explain-data.js" in written
    data = json.loads((folder / "explain-data.json").read_text(encoding="utf-8"))
    script = (folder / "explain-data.js").read_text(encoding="utf-8")
    m = re.search(r"^window\.SAMEDEVICE_EXPLAIN_DATA = (.*);$", script, re.M)
    assert m and json.loads(m.group(1)) == data
    # the build copies docs/javascripts/explain.js; write_assets adds it when a build did not
    assert (folder / "explain.js").read_text(encoding="utf-8").startswith("/*\n * samedevice explain, in the browser")


def test_write_assets_keeps_the_built_script(tmp_path):
    folder = tmp_path / "javascripts"
    folder.mkdir()
    (folder / "explain.js").write_text("// built by mkdocs\n")
    write_assets(tmp_path)
    assert (folder / "explain.js").read_text() == "// built by mkdocs\n"
