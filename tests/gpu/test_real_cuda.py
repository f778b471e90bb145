"""The GPU tier: every case and the simulator's scenario suite on real CUDA, no simulation.

Run with `pytest -m gpu` (and `samedevice verify --real --record`) on a machine with CUDA. On
a machine without one, every test here is skipped with a visible reason (pytest plugin).

The scenario comparison runs each buggy scenario twice in this process: on real CUDA, and on
the simulated accelerator under its own name (``sim:0``) -- the simulator can be enabled next
to real CUDA because it lives on another dispatch key. The simulated message, respelled as
CUDA's (``sim:0`` -> ``cuda:0``, ``PrivateUse1`` -> ``CUDA``), must equal the real one.
"""

from __future__ import annotations

import re

import pytest
import torch

from samedevice.cases import load_cases
from samedevice.verify import PASS, SKIP, verify_case
from tests.sim.test_scenarios import SCENARIOS

pytestmark = pytest.mark.gpu

CASES = load_cases()


def _cuda_spelling(text: str) -> str:
    text = re.sub(r"\bsim:(\d+)", r"cuda:\1", text)
    text = text.replace("wrapper_PrivateUse1_", "wrapper_CUDA_").replace("torch.sim.", "torch.cuda.")
    return text.replace("'sim'", "'cuda'")


def _message(program, device) -> str:
    with pytest.raises(Exception) as info:
        program(device, bug=True)
    return f"{type(info.value).__name__}: {info.value}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.slug)
def test_case_on_real_cuda(case):
    result = verify_case(case, real=True)
    assert result.status in (PASS, SKIP), "\n".join(result.problems)
    if result.status == SKIP:
        pytest.skip(result.reason)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s[0].__name__)
def test_simulated_message_equals_the_real_one(scenario):
    from samedevice import sim

    program = scenario[0]
    real = _message(program, torch.device("cuda", 0))
    simulated = _cuda_spelling(_message(program, sim.enable()))
    assert simulated == real
