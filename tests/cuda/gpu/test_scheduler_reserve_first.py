"""gp.Scheduler with `reserve_sms` on the GPU: the SM reserve exists before any task starts,
so a best-effort task submitted before the guaranteed one runs on the remaining SMs."""

from __future__ import annotations

import threading

import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


def _needs_green_contexts() -> None:
    reason = gp.cuda.sm_partition_unavailable(0)
    if reason is not None:
        pytest.skip(f"no green contexts: {reason}")


def test_best_effort_task_started_first_runs_on_the_rest():
    _needs_green_contexts()
    release = threading.Event()
    sides: dict[str, str | None] = {}

    with gp.Scheduler(total_memory="2GB", device="cuda:0", workers=2, reserve_sms=32) as sched:
        iso = sched._isolation
        assert sched.stats()["isolation"]["reserved_sms"] >= 32, "no reserve at construction"

        def hog() -> None:
            sides["hog"] = iso.side_of(gp.cuda.current_stream())
            x = gp.ones((1024, 1024), dtype="float32", device="cuda:0")
            while not release.is_set():
                x = x * 1.0
            gp.cuda.current_stream().synchronize()

        def request() -> float:
            sides["request"] = iso.side_of(gp.cuda.current_stream())
            return float(gp.sum(gp.ones((64,), device="cuda:0") * 2).to_numpy())

        hog_task = sched.submit(hog, policy="best_effort", name="hog")
        try:
            got = sched.submit(request, memory="64MB", policy="guaranteed",
                               name="request").result(60)  # fmt: skip
        finally:
            release.set()  # a failed wait must not leave the hog spinning at exit
        hog_task.result(60)
        assert sched.stats()["isolation"]["unreserved_tasks"] == 0
    assert got == 128.0
    assert sides == {"hog": "rest", "request": "reserved"}


def test_without_reserve_sms_an_early_best_effort_task_is_counted():
    _needs_green_contexts()
    started, release = threading.Event(), threading.Event()
    with gp.Scheduler(total_memory="2GB", device="cuda:0", workers=2) as sched:

        def hog() -> str | None:
            started.set()  # its stream was chosen before this call
            release.wait(30)
            return sched._isolation.side_of(gp.cuda.current_stream())

        hog_task = sched.submit(hog, policy="best_effort")
        assert started.wait(30)
        sched.submit(lambda: None, memory="64MB", policy="guaranteed", bandwidth=0.25).result(60)
        release.set()
        assert hog_task.result(60) == "all"
        iso = sched.stats()["isolation"]
    assert iso["mode"] == "sm" and iso["unreserved_tasks"] == 1
