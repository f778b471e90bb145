"""pytest plugin (entry point ``samedevice``): an ``accelerator`` fixture that works everywhere.

* ``accelerator`` -- the real CUDA device when one exists, otherwise the simulated accelerator
  (enabled on first use). Tests written against it run on GPU runners and CPU runners alike.
* ``--sim-device={off,sim,cuda}`` -- enable the simulator for the whole session before any
  test runs (``cuda``: a simulated CUDA machine, for code that says "cuda");
  ``--sim-gpus=N`` (ini ``sim_gpus``) -- how many GPUs it has (default 1).
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
    group.addoption("--sim-gpus", type=int, default=None,
                    help="how many GPUs the simulated CUDA machine has (default: ini sim_gpus, else 1)")
    parser.addini("sim_gpus", "how many GPUs the simulated CUDA machine has (default 1)", default="1")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs real CUDA hardware; skipped elsewhere")
    mode = config.getoption("--sim-device", default="off")
    if mode != "off":
        try:
            import torch  # noqa: F401  (samedevice.sim imports it only when enabled)

            from samedevice import sim
        except ModuleNotFoundError as e:
            from samedevice.cli import missing_dependency

            if (line := missing_dependency(e)) is None:
                raise
            raise pytest.UsageError(f"--sim-device={mode} {line}") from None
        from samedevice import torch_support

        if (line := torch_support.problem()) is not None:
            raise pytest.UsageError(f"--sim-device={mode}: {line}")
        gpus = config.getoption("--sim-gpus", default=None) or int(config.getini("sim_gpus") or 1)
        sim.enable(alias_cuda=(mode == "cuda"), gpus=gpus if mode == "cuda" else None)


def _cuda_available() -> bool:
    """Real CUDA: the simulated machine answers ``torch.cuda.is_available()`` too, but a CPU
    build says it was not built with CUDA."""
    try:
        import torch
    except ModuleNotFoundError:  # no PyTorch here: no CUDA either
        return False

    return torch.backends.cuda.is_built() and torch.cuda.is_available()


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


_DEVICE_WORDS = ("device", "Tensor", "cuda", "CUDA", "backend", "GPU", "MPS", "numpy")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A test that fails with a device error gets samedevice's diagnosis as a report section:
    the failing statement's operands with their devices, the culprit and the fix."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.excinfo is None:
        return
    exc = call.excinfo.value
    try:
        text = str(exc)
    except Exception:
        return
    if not any(w in text for w in _DEVICE_WORDS):
        return  # not a device error: no work for other suites' failures
    from samedevice.diagnosis import describe

    diagnosis = describe(exc)
    if diagnosis:
        report.sections.append(("samedevice diagnosis", diagnosis))
