"""benchmarks/coverage.py counts what it says, and the Verification page shows its figures."""

from __future__ import annotations

import importlib.util
import json

from samedevice.cases import get_case, load_cases, repo_root
from samedevice.site.generated import COVERAGE, verification_page
from samedevice.site.sitedata import load_site_data


def _coverage_module():
    spec = importlib.util.spec_from_file_location("coverage_bench", repo_root() / "benchmarks" / "coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_situations_and_explain_families_are_counted_per_split():
    case = get_case("fast-reid-predictor-cuda-features-numpy")
    numpy_error = ("TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() "
                   "to copy the tensor to host memory first.")
    records = [
        {"split": "tune", "situation": case.situations[0], "family": case.family, "text": numpy_error},
        {"split": "tune", "situation": "no-case-has-this", "family": "unknown", "text": numpy_error},
        {"split": "check", "situation": "no-case-has-this", "family": "F10", "text": numpy_error},
    ]
    figures = _coverage_module().figures(records, load_cases())
    assert figures["tune"] == {"reports": 2, "situation_has_page": 1, "labelled_family": 1,
                               "family_in_top3": 1}
    # explain points this message at F9 pages (numpy on a CUDA tensor), not F10's
    assert figures["check"] == {"reports": 1, "situation_has_page": 0, "labelled_family": 1,
                                "family_in_top3": 0}


def test_verification_page_shows_the_stored_coverage_figures():
    stored = json.loads((repo_root() / COVERAGE).read_text())
    page = verification_page(load_site_data(repo_root()))
    assert "## Coverage of real reports" in page
    for split, f in stored["splits"].items():
        assert f"| {split} | {f['reports']} | " in page
        assert f"({f['situation_has_page']} of {f['reports']})" in page
        assert f"({f['family_in_top3']} of {f['labelled_family']})" in page


def test_case_situations_are_labels_of_the_dev_set():
    coverage = _coverage_module()
    labels = {r["situation"] for r in coverage.load_devset(coverage.DEVSET)}
    unknown = {c.slug: s for c in load_cases() for s in c.situations if s not in labels}
    assert unknown == {}, "situations = [...] must use the dev set's labels (benchmarks/devset/situations.md)"


def test_stored_coverage_figures_are_what_the_benchmark_measures_now():
    coverage = _coverage_module()
    stored = json.loads((repo_root() / COVERAGE).read_text())
    now = coverage.figures(coverage.load_devset(coverage.DEVSET), load_cases())
    assert stored["splits"] == now, "rerun: python benchmarks/coverage.py --write"
    assert stored["cases"] == len(load_cases())


def test_verification_page_lists_every_real_release_record():
    data = load_site_data(repo_root())
    page = verification_page(data)
    recorded = [c for c in data.cases if c.upstream_record()]
    assert recorded, "the upstream tier has records (cases/<slug>.upstream.json)"
    assert "## Real releases" in page and "pytest -m upstream tests/upstream" in page
    section = page.split("## Real releases", 1)[1]
    for case in recorded:
        record = case.upstream_record()
        row = next(line for line in section.splitlines() if f"{case.id}]" in line)
        assert f"`{record['package']}`" in row
        for r in record["results"]:
            assert f"{r['version']} {r['observed']}" in row
