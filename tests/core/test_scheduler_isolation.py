"""gp.Scheduler's isolation settings on the CPU device: tiers, argument checks, the
recorded reason when no SMs can be reserved."""

from __future__ import annotations

import pygpukit as gp
import pytest
from pygpukit._sched_isolation import tier_of


@pytest.mark.parametrize(
    ("policy", "memory", "limit", "tier"),
    [
        (None, None, None, "best_effort"),
        (None, "1GB", "1GB", "guaranteed"),
        (None, "1GB", "2GB", "burstable"),
        ("Best-Effort", "1GB", "1GB", "best_effort"),
        ("besteffort", None, None, "best_effort"),
        ("guaranteed", None, None, "guaranteed"),
    ],
)
def test_tier_follows_the_runtimes_inference(policy, memory, limit, tier):
    assert tier_of(policy, memory, limit) == tier


def test_the_cpu_records_why_nothing_is_reserved():
    with gp.Scheduler(total_memory="64MB", workers=1) as sched:
        assert sched.submit(lambda: 7, memory="1MB", policy="guaranteed").result(10) == 7
        iso = sched.stats()["isolation"]
    assert iso["mode"] == "priority" and iso["reserved_sms"] == 0
    assert "cpu" in iso["reason"]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"isolation": "green-ish"}, ValueError),
        ({"isolation": 3}, ValueError),
        ({"reserve_sms": 0}, ValueError),
        ({"reserve_sms": 2.5}, ValueError),
    ],
)
def test_bad_isolation_arguments_name_themselves(kwargs, error):
    name = next(iter(kwargs))
    with pytest.raises(error, match=name):
        gp.Scheduler(total_memory="64MB", workers=1, **kwargs)
