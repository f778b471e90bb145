"""The upstream tier: the real buggy release fails as the case page says, the fix runs.

Opt-in, never part of ``make test``: ``pytest -m upstream tests/upstream`` (needs PyPI; about
two minutes on two cores). Each case installs its releases one by one into throwaway folders
(see ``harness``) and writes ``cases/<slug>.upstream.json`` when all of them behaved as
expected (see ``records``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from samedevice.cases import get_case
from tests.upstream.harness import InstallError, Observation, run_release
from tests.upstream.records import build_record, recording_enabled, write_record
from tests.upstream.releases import CASES, UpstreamCase

pytestmark = pytest.mark.upstream


def _table(spec: UpstreamCase, observations: list[Observation]) -> str:
    rows = [f"{spec.package} {o.version}: expected {o.expected}, observed {o.observed} "
            f"({o.seconds:.1f} s, {o.usage} simulated tensors)"
            + (f" -- {o.exception}: {o.message}" if o.exception else "") for o in observations]
    return "\n".join(rows)


@pytest.mark.parametrize("spec", CASES, ids=lambda s: s.slug)
def test_real_releases(spec: UpstreamCase, tmp_path: Path, record_property) -> None:
    case = get_case(spec.slug)
    observations = []
    for release in spec.releases:
        try:
            observations.append(run_release(case, spec, release, tmp_path / release.version,
                                            torch.__version__))
        except InstallError as e:
            pytest.fail(str(e), pytrace=False)
    summary = _table(spec, observations)
    record_property("upstream", summary)
    print(summary)
    problems = [f"{o.version}: {p}" for o in observations for p in o.problems]
    assert not problems, "\n".join(problems) + "\n\n" + summary
    if recording_enabled():
        write_record(case, build_record(case, spec, observations, torch.__version__))
