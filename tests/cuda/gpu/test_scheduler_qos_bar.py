"""gp.Scheduler isolates a latency-sensitive request from a GEMM hog on the GPU (loosely:
p99 under 3x the request alone; `python -m pygpukit.benchmark qos` holds the real bar)."""

from __future__ import annotations

import pygpukit as gp
import pytest
from pygpukit.benchmark import qos_workload as W

pytestmark = [pytest.mark.gpu, pytest.mark.alone, pytest.mark.timing]  # other work skews times

#: Runs beside the hog before the test gives up. One run's p99 of 150 requests is about its
#: second slowest request, and on the H100 the host's CPU runs 3-10x slower for tens of
#: milliseconds at a time, with or without the hog (scripts/probe_cpu_stalls.py: a fixed
#: integer loop timed around each request is slow around 94% of the slow requests alone):
#: 7 of 94 test runs read 4.5-12x solo on 2026-11-25, and 0 of 100 probe runs in another
#: call. A scheduler that does not isolate the request reads 4.8-12x in every run (the qos
#: benchmark's priority and threads rows), so the best of five still fails it.
ATTEMPTS = 5


def test_request_p99_stays_under_three_times_solo_beside_a_hog():
    device = gp.Device.parse("cuda:0")
    lib = W.pygpukit_library(device)
    alone = W.solo(lib, 150)
    seen = []
    for _ in range(ATTEMPTS):
        shared = W.under_scheduler(lib, device, 150)
        assert shared.hog_per_s > 0, "the hog made no progress under the scheduler"
        seen.append(shared)
        if shared.p99 / alone.p99 < 3.0:
            break
    best = min(seen, key=lambda m: m.p99)
    runs = [f"{m.p99:.2f} ms ({m.p99 / alone.p99:.2f}x, hog {m.hog_per_s:.0f}/s)" for m in seen]
    assert best.p99 / alone.p99 < 3.0, f"request p99 vs {alone.p99:.2f} ms alone: {runs}"
