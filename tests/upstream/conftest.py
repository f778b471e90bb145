"""The upstream tier is opt-in: its tests run only when ``-m`` selects the ``upstream`` mark.

``make test`` and a plain ``pytest`` collect them and skip them with a visible reason (they
download releases from PyPI and take minutes). A passing run prints each release's outcome
in the terminal summary.
"""

from __future__ import annotations

import re

import pytest

SKIP_REASON = ("opt-in upstream tier: installs real library releases from PyPI; "
               "run `pytest -m upstream tests/upstream`")


def upstream_selected(markexpr: str) -> bool:
    """True when the ``-m`` expression names ``upstream`` other than as ``not upstream``
    (``-m upstream``, ``-m "upstream and not slow"``; not ``-m "not upstream"``)."""
    words = re.findall(r"[\w.]+|[()]", markexpr)
    return any(w == "upstream" and (i == 0 or words[i - 1] != "not") for i, w in enumerate(words))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if upstream_selected(config.getoption("markexpr", default="") or ""):
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if item.get_closest_marker("upstream"):
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    lines = [value for report in terminalreporter.stats.get("passed", [])
             for name, value in getattr(report, "user_properties", []) if name == "upstream"]
    if lines:
        terminalreporter.section("upstream releases")
        for text in lines:
            terminalreporter.write_line(text)
