"""The upstream tier, libraries: real releases of what GPU code imports, on the simulated GPU.

Each driver (``drivers/lib-<name>.py``) is a short program written the way CUDA code is written
with that library. It runs three times, each in a fresh interpreter (``samedevice.sim.runner``):
on the simulated GPU ("cuda" mode), on the plain CPU ("cpu" mode, "cuda" read as "cpu"), and on
the simulated GPU with one injected device bug (``SAMEDEVICE_UPSTREAM_BUG=1``). The first two
must leave equal module-level values (losses, weights, generated tokens, metric values); the
third must raise the text CUDA raises. Values named ``*_on_gpu`` say where the library put its
work and must be 1 in the simulated run.

Opt-in: ``pytest -m upstream tests/upstream/test_libraries.py`` (installs the pinned releases
below with ``--no-deps`` into a throwaway folder; torch stays the project's).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from samedevice.sim.runner import RunResult, run_script
from tests.upstream.harness import DRIVERS, InstallError, driver_env, install, reports

pytestmark = pytest.mark.upstream

# The releases pip chose for torch==2.13.0 (2026-11-23) and everything they import, pinned
# (torch's own dependencies come from the project's venv). torchvision 0.28.0 is the
# release built for torch 2.13; PyPI's Linux wheel is a CUDA build, whose C++ ops cannot load
# on a CPU-only torch (see drivers/_torchvision_ops.py) -- its models run, its ops do not.
REQUIREMENTS = (
    "accelerate==1.15.0",
    "annotated-doc==0.0.7",
    "annotated-types==0.8.0",
    "anyio==4.16.0",
    "click==8.5.1",
    "filelock==4.2.12",
    "fsspec==2026.9.0",
    "h11==0.16.0",
    "hf-xet==1.8.0",
    "httpcore2==2.16.2",
    "httpx2==2.16.2",
    "huggingface_hub==2.4.0",
    "idna==3.20",
    "lightning-utilities==0.15.3",
    "markdown-it-py==4.3.0",
    "mdurl==0.1.2",
    "numpy==2.4.6",
    "packaging==26.3",
    "peft==0.21.2",
    "pillow==13.0.0",
    "psutil==7.2.2",
    "pydantic==2.14.3",
    "pydantic_core==2.50.4",
    "Pygments==2.21.0",
    "PyYAML==6.0.3",
    "regex==2026.11.15",
    "rich==15.0.0",
    "safetensors==0.8.0",
    "shellingham==1.5.4",
    "timm==1.0.31",
    "tokenizers==0.23.3",
    "torchmetrics==1.9.0",
    "torchvision==0.28.0",
    "tqdm==4.70.1",
    "transformers==5.23.0",
    "truststore==0.10.5",
    "typer==0.29.2",
    "typing-inspection==0.4.5",
)

SAME = "Expected all tensors to be on the same device, but got "


@dataclass(frozen=True)
class Library:
    name: str  # the distribution; its driver is drivers/lib-<name>.py
    bug: str  # CUDA's text for the injected bug
    prefix: bool = False  # ``bug`` is the start of the message (the rest names a class or a path)


LIBRARIES = (
    Library("torchvision", SAME + "mat1 is on cuda:0, different from other tensors on cpu "
            "(when checking argument in method wrapper_CUDA_addmm)"),
    Library("timm", "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be "
            "the same or input should be a MKLDNN tensor and weight is a dense tensor"),
    Library("transformers", SAME + "index is on cpu, different from other tensors on cuda:0 "
            "(when checking argument in method wrapper_CUDA__index_select)"),
    Library("peft", SAME + "index is on cpu, different from other tensors on cuda:0 "
            "(when checking argument in method wrapper_CUDA__index_select)"),
    Library("accelerate", SAME + "mat1 is on cpu, different from other tensors on cuda:0 "
            "(when checking argument in method wrapper_CUDA_addmm)"),
    Library("torchmetrics", "Encountered different devices in metric calculation", prefix=True),
    Library("safetensors", SAME + "mat1 is on cuda:0, different from other tensors on cpu "
            "(when checking argument in method wrapper_CUDA_addmm)"),
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("libraries")
    try:
        install(REQUIREMENTS, target, timeout=1200.0)
    except InstallError as e:
        pytest.fail(str(e), pytrace=False)
    return target


def _run(lib: Library, site: Path, mode: str, bug: bool = False) -> RunResult:
    env = driver_env(site)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1",
               TOKENIZERS_PARALLELISM="false")
    if bug:
        env["SAMEDEVICE_UPSTREAM_BUG"] = "1"
    return run_script(DRIVERS / f"lib-{lib.name}.py", mode, timeout=600.0, extra_env=env)


def _explain(result: RunResult) -> str:
    return f"{result.mode} run: exit {result.returncode}, {result.exception}\n{result.stderr[-3000:]}"


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda lib: lib.name)
def test_library_runs_as_on_cuda_and_fails_with_cudas_text(lib: Library, site: Path, record_property) -> None:
    gpu, cpu = _run(lib, site, "cuda"), _run(lib, site, "cpu")
    assert gpu.ok, _explain(gpu)
    assert cpu.ok, _explain(cpu)
    imported = [r for r in reports(gpu.stdout) if r.get("event") == "imported"]
    assert imported and imported[0]["file"].startswith(str(site)), imported
    assert imported[0]["torch_file"] == torch.__file__
    assert gpu.usage > 0, "the library never put a tensor on the simulated GPU"
    got, want = gpu.values(), cpu.values()
    flags = {k: v for k, v in got.items() if k.endswith("_on_gpu")}
    assert all(v == 1 for v in flags.values()), f"work left on the CPU: {flags}"
    got = {k: v for k, v in got.items() if not k.endswith("_on_gpu")}
    want = {k: v for k, v in want.items() if not k.endswith("_on_gpu")}
    assert got.keys() == want.keys()
    torch.testing.assert_close(got, want, rtol=0, atol=0)

    bug = _run(lib, site, "cuda", bug=True)
    assert not bug.ok and bug.exception is not None, _explain(bug)
    message = bug.exception["message"]
    assert message.startswith(lib.bug) if lib.prefix else message == lib.bug, message
    record_property("upstream", f"{lib.name} {imported[0]['version']}: equals the CPU run "
                    f"({gpu.usage} simulated tensors, {gpu.seconds:.1f} s); bug: {message[:90]}")
