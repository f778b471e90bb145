"""pytest plugin (entry point ``samedevice``): an ``accelerator`` fixture that works everywhere.

* ``accelerator`` -- the real CUDA device when one exists, otherwise the simulated accelerator
  (enabled on first use). Tests written against it run on GPU runners and CPU runners alike.
* ``--sim-device={off,sim,cuda}`` -- enable the simulator for the whole session before any
  test runs (``cuda``: with the "cuda" alias, for code that says "cuda").
* ``@pytest.mark.gpu`` -- needs real CUDA; skipped with a visible reason elsewhere.

Nothing is enabled unless asked for: installing samedevice does not change other test suites.
"""

from __future__ import annotations

from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("samedevice")
    group.addoption("--sim-device", choices=("off", "sim", "cuda"), default="off",
                    help="enable samedevice's simulated accelerator for the session "
                         "(cuda: code that says 'cuda' runs on it)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs real CUDA hardware; skipped elsewhere")
    mode = config.getoption("--sim-device", default="off")
    if mode != "off":
        from samedevice import sim

        sim.enable(alias_cuda=(mode == "cuda"))


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none on this machine); runs in the GPU tier")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def accelerator() -> Any:
    """A device where device errors behave as on CUDA: real CUDA, or the simulated one."""
    import torch

    if _cuda_available():
        return torch.device("cuda", 0)
    from samedevice import sim

    return sim.enable()
