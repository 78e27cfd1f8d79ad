"""Sizing of SM partitions (pure arithmetic; the partitions themselves need a GPU)."""

from __future__ import annotations

import pytest

green = pytest.importorskip("pygpukit_cuda.green")

H100 = {"sms": 132, "min_partition": 8, "alignment": 8}  # as driver 580 reports it


@pytest.mark.parametrize(
    ("requested", "sms"),
    [(1, 8), (8, 8), (8.1, 16), (13.2, 16), (32, 32), (33, 40), (124, 120), (131, 120)],
)
def test_requests_round_up_to_the_granularity_and_leave_a_rest(requested, sms):
    assert green.round_sms(requested, H100) == sms


def test_impossible_splits_are_refused():
    with pytest.raises(ValueError, match="positive"):
        green.round_sms(0, H100)
    with pytest.raises(ValueError, match="cannot be split"):
        green.round_sms(4, {"sms": 8, "min_partition": 8, "alignment": 8})
