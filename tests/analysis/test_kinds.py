"""Every culprit kind has its family, reason and fix (KINDS) and its place in the ranking of
kinds (KIND_RANK): a kind added to one and not the other ranks last by accident."""

from samedevice.analysis.culprit import KIND_RANK, KINDS


def test_every_kind_is_ranked_and_every_ranked_kind_exists():
    assert set(KIND_RANK) == set(KINDS)


def test_every_kind_names_a_family_a_reason_and_a_fix():
    for kind, (family, why, fix) in KINDS.items():
        assert family in {f"F{i}" for i in range(1, 11)}, kind
        assert why and fix, kind
