"""The knowledge cache: one file per install, reused while current, nothing half-written left."""

from __future__ import annotations

import os

import pytest

from samedevice.explain import cache


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SAMEDEVICE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SAMEDEVICE_NO_CACHE", raising=False)
    return tmp_path


def test_two_installs_keep_a_cache_file_each(cache_dir, monkeypatch):
    here = cache.cache_file(cache.case_root())
    monkeypatch.setattr(cache, "PACKAGE", "/elsewhere/site-packages/samedevice")
    there = cache.cache_file(cache.case_root())
    assert here != there and os.path.dirname(here) == os.path.dirname(there) == str(cache_dir)
    # the same package reading another checkout's cases is another install too
    assert cache.cache_file("/another/checkout") != there


def test_a_current_cache_is_read_back_not_rebuilt(cache_dir, monkeypatch):
    kb = cache.knowledge()
    assert os.listdir(cache_dir) == [os.path.basename(cache.cache_file(cache.case_root()))]

    def no_rebuild(*args):
        raise AssertionError("rebuilt a current cache")

    monkeypatch.setattr("samedevice.explain.knowledge.build", no_rebuild)
    assert cache.knowledge() == kb


def test_a_failed_write_leaves_no_temporary_file(cache_dir, monkeypatch):
    real_replace = os.replace

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    kb = cache.knowledge()
    monkeypatch.setattr(os, "replace", real_replace)
    assert kb["templates"] and os.listdir(cache_dir) == []
