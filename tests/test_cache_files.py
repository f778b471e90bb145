"""Cache files (issue 29): the op table honours ``SAMEDEVICE_CACHE_DIR`` as the explain cache
does, and a write that fails or is interrupted leaves no temporary file behind."""

from __future__ import annotations

import os

import pytest


def test_the_op_table_cache_goes_where_samedevice_cache_dir_says(tmp_path, monkeypatch):
    pytest.importorskip("torchgen")
    from samedevice.sim import _optable

    monkeypatch.setenv("SAMEDEVICE_CACHE_DIR", str(tmp_path))
    facts = _optable.load()
    assert "add.Tensor" in facts
    assert [p.name.startswith("optable-") for p in tmp_path.iterdir()] == [True]


def test_an_interrupted_explain_cache_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    from samedevice.explain import cache

    monkeypatch.setenv("SAMEDEVICE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SAMEDEVICE_NO_CACHE", raising=False)

    def interrupted(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cache.knowledge()
    assert list(tmp_path.iterdir()) == []
