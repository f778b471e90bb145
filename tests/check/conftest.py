"""The ``upstream`` test here is opt-in, like the rest of the upstream tier."""

from __future__ import annotations

import pytest

from tests.upstream.conftest import SKIP_REASON, upstream_selected


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if upstream_selected(config.getoption("markexpr", default="") or ""):
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if item.get_closest_marker("upstream") and "tests/check/" in item.nodeid:
            item.add_marker(skip)
