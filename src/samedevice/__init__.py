"""samedevice: the field guide to PyTorch device errors.

Importing the package is cheap: nothing here imports torch. ``samedevice.sim``,
``samedevice.audit`` and ``samedevice.locate`` load it when first used.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__", "assert_on_device", "audit", "locate", "sim"]

_LAZY = {
    "audit": ("samedevice.auditing", "audit"),
    "locate": ("samedevice.auditing", "locate"),
    "assert_on_device": ("samedevice.auditing", "assert_on_device"),
    "sim": ("samedevice.sim", None),
}


def __getattr__(name: str) -> object:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'samedevice' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(target[0])
    value = module if target[1] is None else getattr(module, target[1])
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    # the lazy names too: tab completion and dir() show audit, locate and sim before first use
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext samedevice``: enable the simulated accelerator in a notebook."""
    from samedevice.ipython import load_ipython_extension as load

    load(ipython)
