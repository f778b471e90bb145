"""The "Error messages" page as a reader sees it: eras in release order, two columns, family
ids with their names and links, no doubled punctuation between a note and its links."""

from __future__ import annotations

import re

from samedevice.explain.catalogue import _era_key, load_templates, render_messages_page

PAGE = render_messages_page()


def _eras(tid: str) -> list[str]:
    section = PAGE.split(f'<a id="{tid.lower()}"></a>')[1].split("**Next step:**")[0]
    table = section.split("### Eras")[1]
    return [line.split("|")[1].strip() for line in table.splitlines()
            if line.startswith("| ") and not line.startswith("| PyTorch")]


def test_eras_are_in_release_order():
    assert _eras("T1") == ["1.0 (reports only)", "<= 1.1.x", "1.2.0", "~1.3 - 1.5.x", "1.6.0 - 2.14.1 (current)",
                           "1.9.0 - 1.9.x", "1.10.0 - 1.13.x", "2.0.0 - 2.7.x"]
    assert _eras("T3")[-1] == "proposed (not in 2.14.1)"
    assert _era_key("torchmetrics (library rewrite of T1/T2)") == (1,)  # names no release


def test_each_eras_table_has_two_columns():
    rows = [line for line in PAGE.splitlines() if line.startswith("| PyTorch")]
    assert rows and all(line.count("|") == 3 for line in rows)


def test_no_stray_punctuation_before_links():
    assert not re.search(r"[.;:]; \[", PAGE)
    assert '(sic). [pytorch/pytorch#56570' in PAGE


def test_family_ids_carry_their_names_and_links():
    families_cell = next(line for line in PAGE.splitlines() if line.startswith("| [T1](#t1)"))
    fam = load_templates()["T1"]["families"][0]
    assert re.search(rf"\[{fam} [A-Z][^\]]+\]\(\.\./families/{fam.lower()}/\)", families_cell), families_cell


def test_case_tables_name_the_templates():
    from samedevice.cases import repo_root
    from samedevice.site import generated, sitedata

    data = sitedata.load_site_data(repo_root())
    case = next(c for c in data.cases if c.slug == "lightly-dino-loss-center")
    table = generated.case_table(data, [case], "index.md")
    heading = data.templates["T1"].heading
    assert heading.startswith("T1 Expected all tensors")
    assert f"[{generated.cell(heading)}](messages/t1/index.md)" in table
