"""Without numpy (the [torch] extra brings it), torch's "Failed to initialize NumPy" warning
is silenced in samedevice's own processes; with numpy installed, nothing is filtered."""

from __future__ import annotations

import importlib.util
import warnings

from samedevice._quiet_numpy import quiet_missing_numpy

TORCH_TEXT = "Failed to initialize NumPy: No module named 'numpy' (Triggered internally at ...)"


def _warned_after_quieting(monkeypatch, numpy_installed: bool) -> list[str]:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: real(name, *a) if numpy_installed or name != "numpy" else None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_missing_numpy()
        warnings.warn(TORCH_TEXT, UserWarning, stacklevel=1)
        warnings.warn("another warning", UserWarning, stacklevel=1)
    return [str(w.message) for w in caught]


def test_silenced_when_numpy_is_missing(monkeypatch):
    assert _warned_after_quieting(monkeypatch, numpy_installed=False) == ["another warning"]


def test_left_alone_when_numpy_is_installed(monkeypatch):
    assert _warned_after_quieting(monkeypatch, numpy_installed=True) == [TORCH_TEXT, "another warning"]
