"""The shared test vectors (tests/explain/vectors.json) against the Python engine.

The same vectors run against the browser engine in test_parity.py: one set of expectations,
two implementations of the same rules.
"""

from __future__ import annotations

import pytest

from conftest import VECTORS, check


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector(explain, vector):
    result = explain(vector["text"])
    assert check(result, vector["expect"]) == []
