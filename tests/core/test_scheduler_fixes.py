"""gp.Scheduler on the CPU device: default memory, freed failures and results, the
submitter's config context, cancel at the launch gate, and argument checks."""

from __future__ import annotations

import gc
import os
import threading
import time
import weakref

import _pygpukit_rust as rust
import numpy as np
import pygpukit as gp
import pytest

MiB = 1 << 20


class Payload:
    """Stands for a task's arrays: something a leaked exception would keep alive."""


def _host_ram() -> int:
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def test_total_memory_defaults_to_host_ram_on_the_cpu():
    with gp.Scheduler(workers=1) as sched:
        assert sched.stats()["total_memory"] == _host_ram()


def test_total_memory_defaults_to_the_devices_memory(monkeypatch):
    # what a GPU backend's memory stats report: the device's own memory, no pool quota
    device_total = 80 * 1024**3 + 12345
    monkeypatch.setattr(gp.memory, "stats", lambda device=None: {"device_total": device_total})
    with gp.Scheduler(workers=1) as sched:
        assert sched.stats()["total_memory"] == device_total


def _submit_failing(sched: gp.Scheduler, payload: Payload) -> gp.scheduler.Task:
    def boom(p: Payload) -> None:
        local_copy = p  # a frame local the traceback would otherwise keep
        raise ValueError(f"task failed holding {type(local_copy).__name__}")

    return sched.submit(boom, payload)


def _traceback_depth(exc: BaseException) -> int:
    depth, tb = 0, exc.__traceback__
    while tb is not None:
        depth, tb = depth + 1, tb.tb_next
    return depth


def test_a_failed_task_frees_the_scheduler_and_its_arrays():
    def scenario() -> tuple[weakref.ref[gp.Scheduler], weakref.ref[Payload]]:
        sched = gp.Scheduler(total_memory="64MB", workers=1)
        payload = Payload()
        task = _submit_failing(sched, payload)
        depths = []
        for _ in range(3):
            with pytest.raises(ValueError, match="task failed") as info:
                task.result(10)
            depths.append(_traceback_depth(info.value))
            del info
        assert depths[0] == depths[1] == depths[2], f"the traceback grew: {depths}"
        sched.shutdown()
        return weakref.ref(sched), weakref.ref(payload)

    sched_ref, payload_ref = scenario()
    gc.collect()
    assert sched_ref() is None, "the failed task's exception kept the scheduler alive"
    assert payload_ref() is None, "the failed task's exception kept its arguments alive"


def test_the_runtime_scheduler_reraises_a_fresh_exception_each_time():
    rs = rust.TaskScheduler(64 * MiB, workers=1)

    def boom() -> None:
        raise KeyError("inside")

    tid = rs.submit(boom)
    depths = []
    for _ in range(3):
        with pytest.raises(KeyError, match="inside") as info:
            rs.result(tid, 10)
        depths.append(_traceback_depth(info.value))
    assert depths[0] == depths[1] == depths[2], f"the traceback grew: {depths}"
    rs.shutdown()


def test_the_garbage_collector_sees_results_the_runtime_holds():
    # a result referring back to its scheduler: a cycle only a GC traversal can break
    def scenario() -> weakref.ref[Payload]:
        rs = rust.TaskScheduler(64 * MiB, workers=1)
        holder = Payload()
        tid = rs.submit(lambda: holder)
        assert rs.wait(tid, 10)
        holder.scheduler = rs  # type: ignore[attr-defined]
        return weakref.ref(holder)

    holder_ref = scenario()
    gc.collect()
    deadline = time.monotonic() + 5  # the worker thread lets go of its job on its own time
    while holder_ref() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
        gc.collect()
    assert holder_ref() is None


def _one_mib() -> gp.GPUArray:
    return gp.empty((MiB,), dtype="uint8")


def test_dropped_results_are_no_longer_charged():
    with gp.Scheduler(total_memory=10 * MiB, workers=2) as sched:
        results = [sched.submit(_one_mib).result(10) for _ in range(10)]
        assert sched.stats()["available_memory"] == 0  # the quota is exact to the byte
        with pytest.raises(gp.AdmissionError, match="memory"):
            sched.submit(_one_mib)
        del results
        gc.collect()
        eleventh = sched.submit(_one_mib).result(10)
        assert eleventh.nbytes == MiB


def test_a_result_nobody_took_dies_with_its_task_handle():
    with gp.Scheduler(total_memory=4 * MiB, workers=1) as sched:
        tasks = [sched.submit(_one_mib) for _ in range(4)]
        for task in tasks:
            task._sched._rs.wait(task.id, 10)
        assert sched.stats()["available_memory"] == 0
        del tasks, task
        gc.collect()
        assert sched.stats()["available_memory"] == 4 * MiB


def test_a_result_can_be_read_again():
    with gp.Scheduler(total_memory="64MB", workers=1) as sched:
        task = sched.submit(lambda: [1, 2, 3])
        assert task.result(10) is task.result(10)


def test_tasks_run_in_the_submitters_config_context():
    with gp.Scheduler(total_memory="64MB", workers=2) as sched:
        read = lambda: gp.config.get()["allow_tf32"].value  # noqa: E731
        outside = sched.submit(read).result(10)
        with gp.config.use(allow_tf32=not outside):
            inside = sched.submit(read)
        assert inside.result(10) is (not outside)
        assert sched.submit(read).result(10) is outside


def _launch_until_stopped(stop: threading.Event) -> int:
    x = gp.asarray(np.random.default_rng().standard_normal(64))
    n = 0
    while not stop.is_set():
        gp.exp(x)
        n += 1
    return n


def test_cancel_refuses_a_launch_waiting_at_the_gate():
    # 2 launches/s at a 5% share: past its burst the task waits at the gate for ~10 s a launch
    with gp.Scheduler(total_memory="64MB", workers=1, launch_rate=2.0) as sched:
        stop = threading.Event()
        task = sched.submit(_launch_until_stopped, stop, policy="best_effort")
        deadline = time.monotonic() + 10
        while task.stats()["throttle_events"] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert task.stats()["throttle_events"] > 0, "the task never reached the gate's limit"
        launches = task.stats()["launches"]
        started = time.monotonic()
        assert task.cancel()
        with pytest.raises(gp.TaskCancelled, match=rf"task {task.id} .*cancelled"):
            task.result(10)
        assert time.monotonic() - started < 5, "cancel waited for the throttled launch"
        assert task.stats()["launches"] == launches, "a launch went through after cancel"
        stop.set()


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"workers": -1}, ValueError, "workers"),
        ({"workers": 2.5}, TypeError, "workers"),
        ({"total_memory": 0}, ValueError, "total_memory"),
        ({"total_memory": "-1GB"}, ValueError, "total_memory"),
        ({"total_memory": 1.5}, TypeError, "total_memory"),
        ({"total_bandwidth": 0}, ValueError, "total_bandwidth"),
        ({"launch_rate": -1}, ValueError, "launch_rate"),
    ],
)
def test_bad_scheduler_arguments_name_the_argument(kwargs, error, name):
    with pytest.raises(error, match=name):
        gp.Scheduler(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"policy": 5}, TypeError, "policy"),
        ({"policy": "gold"}, ValueError, "policy"),
        ({"priority": 2**70}, ValueError, "priority"),
        ({"priority": "high"}, TypeError, "priority"),
        ({"memory": "-1GB"}, ValueError, "memory"),
        ({"memory": 0}, ValueError, "memory"),
        ({"bandwidth": 2.0}, ValueError, "bandwidth"),
        ({"deadline": -1}, ValueError, "deadline"),
    ],
)
def test_bad_submit_arguments_name_the_argument(kwargs, error, name):
    with gp.Scheduler(total_memory="64MB", workers=1) as sched, pytest.raises(error, match=name):
        sched.submit(lambda: None, **kwargs)
