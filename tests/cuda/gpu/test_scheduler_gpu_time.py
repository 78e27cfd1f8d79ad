"""gp.Scheduler on the GPU: tasks are charged the device time of their launches (events at
the native launch point), and a best-effort task's queued launches stay bounded."""

from __future__ import annotations

import threading
import time

import numpy as np
import pygpukit as gp
import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.alone, pytest.mark.timing]  # other work skews times


def _operands(n: int) -> tuple[gp.GPUArray, gp.GPUArray]:
    rng = np.random.default_rng()
    a = gp.asarray(rng.standard_normal((n, n)).astype(np.float32), device="cuda:0")
    b = gp.asarray(rng.standard_normal((n, n)).astype(np.float32), device="cuda:0")
    return a.astype("bfloat16"), b.astype("bfloat16")


def test_a_task_is_charged_its_device_time():
    def work() -> float:
        a, b = _operands(2048)
        started = time.perf_counter()
        for _ in range(16):
            a = gp.matmul(a, b) * 0.01
        a.to_numpy()
        return time.perf_counter() - started

    with gp.Scheduler(total_memory="4GB", device="cuda:0") as sched:
        task = sched.submit(work, policy="guaranteed", memory="1GB")
        wall = task.result(120)
        stats = task.stats()
    assert stats["gpu_time"] > 0, "no launch of the task was measured on the device"
    # device time of serial launches cannot exceed the time they took, plus the uploads
    assert stats["gpu_time"] <= wall + 0.05
    assert stats["busy_time"] >= stats["gpu_time"]  # plus the copies' host-side time
    assert stats["queued_launches"] == 0


def test_best_effort_launches_queue_at_most_the_bound():
    """The bound is on queued device time (2 ms by default), at least 2 launches: a
    best-effort 8192-cubed product runs as 4 row slices of ~0.4 ms, so about 5 of them may
    wait. The casts before the products must not loosen it (they once let 9 queue)."""
    stop = threading.Event()

    def hog() -> int:
        a, b = _operands(8192)
        n = 0
        while not stop.is_set() and n < 100:
            gp.matmul(a, b)  # never synchronised: only the gate holds it back
            n += 1
        return n

    with gp.Scheduler(total_memory="8GB", device="cuda:0") as sched:
        task = sched.submit(hog, policy="best_effort")
        deepest = 0
        deadline = time.monotonic() + 20
        while not task.done() and time.monotonic() < deadline:
            now = task.stats()
            # the estimate per launch comes from launches that finished: until the first
            # slice has, a burst may pass the bound once (for less than that slice's time)
            if now["launches"] >= 12:
                deepest = max(deepest, now["queued_launches"])
            time.sleep(0.0005)
        stop.set()
        launched = task.result(120)
        stats = task.stats()
    assert launched > 0
    per_launch = stats["gpu_time"] / max(1, stats["launches"])  # slices, mostly
    allowed = max(2, int(2e-3 / per_launch)) + 1  # +1: a stats read between retire and poll
    assert 1 <= deepest <= allowed, (
        f"{deepest} launches were queued on the device at once; {per_launch * 1e3:.3f} ms "
        f"a launch allows {allowed}"
    )
    assert stats["throttle_events"] > 0, "the gate never held the hog back"
    assert stats["gpu_time"] > 0
