"""The site's Rules page and the case pages' "Find it in your code" come from the registry
and from the rules each case file names."""

from __future__ import annotations

from pathlib import Path

from samedevice.cases import get_case, load_cases
from samedevice.check import RULES
from samedevice.site import generated, sitedata

ROOT = Path(__file__).resolve().parents[2]


def test_rules_page_has_a_section_per_rule_with_its_cases():
    data = sitedata.load_site_data(ROOT)
    page = generated.virtual_pages(data, None)[generated.RULES]
    for rule in RULES:
        assert f"## {rule.code} `{rule.name}` {{ #{rule.code.lower()} }}" in page
        assert rule.example.strip().splitlines()[0] in page
        for case in load_cases():
            if rule.code in case.check_rules:
                assert f"(cases/{case.slug}.ipynb)" in page
    assert generated.RULES in generated.page_uris()
    family = generated.virtual_pages(data, None)[generated.family_uri("F2")]
    assert "- [SD201 `plain-tensor-attribute`](../../rules.md#sd201): " in family
    assert "Check your code: rules.md" in (ROOT / "mkdocs.yml").read_text()


def test_case_page_runs_the_checker_where_a_rule_covers_it():
    from samedevice.pages.notebook import build_cells

    covered = get_case("lightly-dino-loss-center")
    sources = [c.source for c in build_cells(covered)]
    assert ('import samedevice.check\nsamedevice.check.run("../snippets/lightly-dino-loss-center/'
            "broken.py\", display='snippets/lightly-dino-loss-center/broken.py')\n") in sources
    uncovered = next(c for c in load_cases() if not c.check_rules)
    assert not any("samedevice.check" in c.source for c in build_cells(uncovered))
