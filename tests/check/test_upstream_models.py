"""Precision on real model code (opt-in: ``pytest -m upstream tests/check``).

Installs torchvision, timm and transformers without dependencies (a static checker needs no
torch) into a throwaway environment and checks their model code. Every finding must be listed
in ``REVIEWED`` with what it is; the goal is at most one finding per 10,000 lines.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from samedevice.check import runner

PACKAGES = {"torchvision": "0.29.2", "timm": "1.0.31", "transformers": "5.23.0"}
TREES = ("torchvision", "timm", "transformers/models")

_SAM = ("real, the segment-anything bug of case SD-0009: NMS categories `torch.zeros(n)` made on "
        "the CPU next to boxes and scores from the model; torchvision's per-class NMS path "
        "indexes them with device indices")
# "package/relative/path.py:line CODE" -> the review (issue 14: 6 findings in 1,232,354 lines)
REVIEWED: dict[str, str] = {
    "transformers/models/sam/image_processing_sam.py:721 SD401": _SAM,
    "transformers/models/sam/image_processing_pil_sam.py:750 SD401": _SAM,
    "transformers/models/sam2/image_processing_sam2.py:325 SD401": _SAM,
    "transformers/models/sam3/image_processing_sam3.py:328 SD401": _SAM,
    "transformers/models/oneformer/modeling_oneformer.py:2301 SD202": (
        "real, latent: OneFormerTransformerModule keeps its input projections in a plain list; "
        "when in_features != hidden_dim or config.enforce_input_proj they are nn.Conv2d layers "
        "that .to(), .parameters() and state_dict() never see (else empty nn.Sequential())"),
    "transformers/models/nemotron3_5_transcribe/processing_nemotron3_5_transcribe.py:210 SD401": (
        "real: `torch.linspace` positions (CPU) build `fraction`, which multiplies "
        "`probabilities[...]`, a tensor argument that is on the accelerator when the model's "
        "output is passed straight in"),
}


@pytest.fixture(scope="module")
def site_packages(tmp_path_factory) -> Path:
    env = tmp_path_factory.mktemp("check-upstream") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    pip = env / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", "--no-deps",
                    *(f"{name}=={version}" for name, version in PACKAGES.items())], check=True)
    purelib = subprocess.run([str(env / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    return Path(purelib)


@pytest.mark.upstream
def test_model_code_of_torchvision_timm_transformers(site_packages, record_property):
    files = runner.collect([str(site_packages / t) for t in TREES], [])
    findings, lines = runner.check_files(files, None, jobs=2)
    got = {f"{Path(f.path).relative_to(site_packages).as_posix()}:{f.line} {f.code}" for f in findings}
    record_property("upstream", f"samedevice check: {len(files)} files, {lines} lines of "
                                f"{', '.join(f'{k} {v}' for k, v in PACKAGES.items())}: "
                                f"{len(findings)} findings")
    assert got == set(REVIEWED)
    assert len(findings) <= max(1, lines // 10_000)

