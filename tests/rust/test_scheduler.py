"""The TaskScheduler executor through the bindings: results, cancellation, fair sharing,
pacing, memory limits, asyncio callbacks and concurrent submission."""

import asyncio
import threading
import time

import pytest

rust = pytest.importorskip("_pygpukit_rust")

MS = 1_000_000


@pytest.fixture
def make_sched():
    made = []

    def make(**kw):
        kw.setdefault("total_memory", "1GiB")
        s = rust.TaskScheduler(**kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.shutdown(wait=True, cancel_pending=True)


def test_results_and_exceptions(make_sched):
    s = make_sched(workers=2)
    ok = s.submit(lambda x, y=0: x + y, (1,), {"y": 2})
    assert s.result(ok, timeout=10) == 3

    def boom():
        raise ValueError("nope")

    bad = s.submit(boom)
    with pytest.raises(ValueError, match="nope"):
        s.result(bad, timeout=10)
    assert s.state(bad) == "failed" and s.state(ok) == "completed"
    st = s.stats(ok)
    assert st["submitted_at"] <= st["admitted_at"] <= st["started_at"] <= st["finished_at"]
    assert st["wait_time"] >= 0 and st["run_time"] >= 0 and st["name"] == "<lambda>"
    with pytest.raises(KeyError):
        s.result(123456)
    g = s.stats()
    assert g["completed"] == 1 and g["failed"] == 1 and g["submitted"] == 2


def test_policy_inference_and_admission_errors(make_sched):
    s = make_sched(total_memory=1000)
    tid = s.submit(lambda: None, memory_request=100, memory_limit=100)
    assert s.stats(tid)["policy"] == "guaranteed"
    assert s.stats(s.submit(lambda: None, memory_request=10))["policy"] == "burstable"
    assert s.stats(s.submit(lambda: None))["policy"] == "best_effort"
    with pytest.raises(rust.AdmissionError, match="exceeds") as e:
        s.submit(lambda: None, memory_request="2KB", policy="guaranteed")
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(ValueError):
        s.submit(lambda: None, memory_request=10, memory_limit=20, policy="guaranteed")
    with pytest.raises(ValueError):
        s.submit(lambda: None, bandwidth=0)
    with pytest.raises(ValueError):
        s.submit(lambda: None, memory_request="ten bytes")
    with pytest.raises(KeyError):
        s.submit(lambda: None, memory_request=1, partition="missing")
    assert s.stats()["rejected"] == 1


def test_cancel_queued_task(make_sched):
    s = make_sched(total_memory=1000, workers=2)
    release = threading.Event()
    s.submit(release.wait, (10,), memory_request=1000, memory_limit=1000)  # holds all memory
    waiting = s.submit(lambda: "ran", memory_request=500, memory_limit=500)
    later = s.submit(lambda: "later", memory_request=500, memory_limit=500)
    assert s.state(waiting) == "queued"
    assert s.stats(waiting)["queue_position"] == 1
    assert s.stats(later)["queue_position"] == 2
    assert s.cancel(waiting) is True
    assert s.state(waiting) == "cancelled"
    assert s.stats(later)["queue_position"] == 1
    with pytest.raises(rust.TaskCancelled):
        s.result(waiting, timeout=5)
    release.set()
    assert s.result(later, timeout=10) == "later"  # admitted once the blocker freed memory
    assert s.cancel(later) is False  # already finished


def test_cancel_running_task_at_launch_gate(make_sched):
    s = make_sched(workers=1, launch_rate=0)
    started = threading.Event()
    seen = []

    def loop():
        started.set()
        while True:
            # a cancel may land between a grant and the next line, so what must hold is:
            # once cancel was requested, the next begin raises TaskCancelled
            requested = rust.task_cancel_requested()
            tok = rust.task_launch_begin()
            seen.append(requested)
            rust.task_launch_end(tok, 1000)
            time.sleep(0.001)

    tid = s.submit(loop, bandwidth=0.5, memory_request=0)
    assert started.wait(10)
    assert s.cancel(tid) is True
    with pytest.raises(rust.TaskCancelled):
        s.result(tid, timeout=10)
    assert s.state(tid) == "cancelled"
    assert s.stats(tid)["cancel_requested"] and not any(seen)


def test_cancel_is_cooperative(make_sched):
    s = make_sched(workers=1)
    go = threading.Event()
    tid = s.submit(lambda: (go.wait(10), rust.task_cancel_requested())[1])
    while s.state(tid) != "running":
        time.sleep(0.001)
    assert s.cancel(tid) is True
    go.set()
    assert s.result(tid, timeout=10) is True  # no launch gate: it ran to completion
    assert s.state(tid) == "completed"


def test_launch_gate_outside_a_task_is_a_noop():
    assert rust.task_launch_begin() is None
    assert rust.task_launch_end(None) == 0
    assert rust.current_task_id() is None
    rust.task_memory_charge(10**12)  # no task: nothing to charge


def test_launch_token_ends_once(make_sched):
    s = make_sched(workers=1, launch_rate=0)

    def body():
        tok = rust.task_launch_begin()
        assert tok.task_id == rust.current_task_id()
        assert rust.task_launch_end(tok, busy_ns=5 * MS) == 5 * MS
        with pytest.raises(ValueError):
            rust.task_launch_end(tok)
        tok2 = rust.task_launch_begin()
        del tok2  # dropped without end: the device must be given back
        return rust.task_launch_begin() is not None

    tid = s.submit(body)
    assert s.result(tid, timeout=10) is True
    st = s.stats(tid)
    assert st["launches"] == 3 and st["busy_ns"] >= 5 * MS


def test_fair_share_seventy_thirty(make_sched):
    """Two always-busy tasks: device busy time splits 0.7/0.3 (shares of granted busy
    time, so host speed does not matter)."""
    s = make_sched(workers=2, launch_rate=0, fair_share_idle_s=0.05)
    barrier = threading.Barrier(2)
    stop = threading.Event()

    def worker():
        barrier.wait(10)
        while not stop.is_set():
            tok = rust.task_launch_begin()
            rust.spin_ns(MS)  # ~1 ms of "device" work, GIL released
            rust.task_launch_end(tok)

    a = s.submit(worker, bandwidth=0.7, memory_request=0)
    b = s.submit(worker, bandwidth=0.3, memory_request=0)
    time.sleep(1.5)
    stop.set()
    s.result(a, timeout=10)
    s.result(b, timeout=10)
    busy_a = s.stats(a)["busy_ns"]
    busy_b = s.stats(b)["busy_ns"]
    share = busy_a / (busy_a + busy_b)
    assert abs(share - 0.7) < 0.05, (share, busy_a, busy_b)
    assert s.stats(a)["launches"] > 100


def test_equal_shares_are_equal(make_sched):
    s = make_sched(workers=2, launch_rate=0, fair_share_idle_s=0.05)
    barrier = threading.Barrier(2)
    stop = threading.Event()

    def worker():
        barrier.wait(10)
        while not stop.is_set():
            rust.task_launch_end(rust.task_launch_begin(), 200_000)

    ids = [s.submit(worker, bandwidth=0.4, memory_request=0) for _ in range(2)]
    time.sleep(0.5)
    stop.set()
    busy = [s.result(i, timeout=10) or s.stats(i)["busy_ns"] for i in ids]
    assert abs(busy[0] / sum(busy) - 0.5) < 0.05, busy


def test_token_bucket_paces_launches(make_sched):
    # Device rate 1000 launches/s * share 0.2 = 200/s, burst 5.
    s = make_sched(workers=1, launch_rate=1000, launch_burst=5)

    def body(n):
        t0 = time.perf_counter()
        for _ in range(n):
            rust.task_launch_end(rust.task_launch_begin(), 0)
        return time.perf_counter() - t0

    n = 65
    tid = s.submit(body, (n,), bandwidth=0.2, memory_request=0)
    elapsed = s.result(tid, timeout=30)
    rate = (n - 5) / elapsed
    assert rate <= 200 * 1.05, rate  # never faster than the bucket allows
    assert rate >= 200 * 0.5, rate  # and not pathologically slow
    st = s.stats(tid)
    # Every launch past the burst waited, unless the thread woke late enough to find a token.
    assert st["launches"] == n and 1 <= st["throttle_events"] <= n - 5
    # the bucket's waits show as time at the gate: ~0.3 s in all, each wait ~5 ms
    assert 0.15 <= st["gate_wait_time"] <= elapsed
    assert 0.002 <= st["gate_wait_max"] <= st["gate_wait_time"]


def test_memory_limit_raises_memory_error_in_that_task_only(make_sched):
    s = make_sched(total_memory=1000, workers=2)

    def guaranteed():
        rust.task_memory_charge(800)
        try:
            rust.task_memory_charge(300)
        except MemoryError as e:
            msg = str(e)
        rust.task_memory_release(800)
        return msg

    def bursty():
        rust.task_memory_charge(150)  # 100 reserved + 50 borrowed
        try:
            rust.task_memory_charge(10_000)
        except MemoryError as e:
            return str(e)

    g = s.submit(guaranteed, memory_request=900, memory_limit=900)
    msg = s.result(g, timeout=10)
    assert "300" in msg and "900" in msg and "limit" in msg
    assert s.stats(g)["memory_peak"] == 800 and s.stats(g)["memory_used"] == 0
    b = s.submit(bursty, memory_request=100, memory_limit="1MB")
    msg = s.result(b, timeout=10)
    assert "free" in msg
    # The burstable task's 150 bytes outlive it: they stay accounted as borrowed.
    assert s.stats()["borrowed_memory"] == 150
    ok = s.submit(lambda: "fine", memory_request=850, memory_limit=850)
    assert s.result(ok, timeout=10) == "fine"


def test_priority_orders_waiting_tasks(make_sched):
    s = make_sched(workers=1)
    gate = threading.Event()
    order = []
    first = s.submit(gate.wait, (10,))
    while s.state(first) != "running":
        time.sleep(0.001)
    low = s.submit(order.append, ("low",), priority=0)
    high = s.submit(order.append, ("high",), priority=9)
    gate.set()
    s.result(low, timeout=10)
    s.result(high, timeout=10)
    assert order == ["high", "low"]


def test_partitions_in_scheduler(make_sched):
    s = make_sched(total_memory="8GiB")
    p = s.create_partition(
        "inference", "Inference", rust.PartitionLimits().memory("4GiB").compute(0.5).priority(1)
    )
    assert p.priority_band == 1
    tid = s.submit(lambda: 1, memory_request="3GiB", memory_limit="3GiB", partition="inference")
    assert s.result(tid, timeout=10) == 1
    with pytest.raises(rust.AdmissionError):
        s.submit(lambda: 1, memory_request="5GiB", memory_limit="5GiB", partition="inference")
    assert s.stats(tid)["partition"] == "inference"
    assert s.stats()["partitions"]["inference"]["memory_quota"] == 4 * 1024**3


def test_asyncio_via_done_callback(make_sched):
    s = make_sched(workers=2)

    async def main():
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        tid = s.submit(lambda: 42)
        s.add_done_callback(tid, lambda t: loop.call_soon_threadsafe(fut.set_result, s.result(t)))
        return await asyncio.wait_for(fut, 10)

    assert asyncio.run(main()) == 42
    # A callback added after completion runs immediately.
    tid = s.submit(lambda: 1)
    s.wait(tid, 10)
    got = []
    s.add_done_callback(tid, got.append)
    assert got == [tid]


def test_timeout_and_wait(make_sched):
    s = make_sched(workers=1)
    ev = threading.Event()
    tid = s.submit(ev.wait, (10,))
    with pytest.raises(TimeoutError):
        s.result(tid, timeout=0.05)
    assert s.wait(tid, 0.01) is False
    ev.set()
    assert s.wait(tid, 10) is True and s.done(tid)


def test_many_threads_submit_at_once(make_sched):
    s = make_sched(workers=4, total_memory=10**9)
    ids, lock = [], threading.Lock()

    def client(k):
        mine = [
            s.submit(lambda i=i: i * 2, memory_request=1000, memory_limit=1000) for i in range(50)
        ]
        with lock:
            ids.extend(mine)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 400
    assert sum(s.result(i, timeout=30) for i in ids) == 8 * sum(i * 2 for i in range(50))
    st = s.stats()
    assert st["completed"] == 400 and st["reserved_memory"] == 0


def test_shutdown(make_sched):
    s = make_sched(total_memory=100, workers=1)
    ev = threading.Event()
    a = s.submit(ev.wait, (10,), memory_request=100, memory_limit=100)
    b = s.submit(lambda: 1, memory_request=100, memory_limit=100)
    assert s.state(b) == "queued"
    while s.state(a) != "running":
        time.sleep(0.001)
    s.shutdown(wait=False, cancel_pending=True)
    assert s.state(b) == "cancelled" and s.state(a) == "running"
    ev.set()
    s.shutdown(wait=True)
    assert s.state(b) == "cancelled" and s.state(a) == "completed"
    with pytest.raises(RuntimeError):
        s.submit(lambda: 1)


def test_partition_priority_band_starts_first(make_sched):
    s = make_sched(workers=1, total_memory="1GiB")
    s.create_partition(
        "urgent", "Urgent", rust.PartitionLimits().memory("256MiB").compute(0.3).priority(5)
    )
    gate = threading.Event()
    order = []
    first = s.submit(gate.wait, (10,))
    while s.state(first) != "running":
        time.sleep(0.001)
    plain = s.submit(order.append, ("default",), priority=3)
    urgent = s.submit(order.append, ("urgent",), memory_request="1MiB", partition="urgent")
    gate.set()
    s.result(plain, timeout=10)
    s.result(urgent, timeout=10)
    assert order == ["urgent", "default"]


def test_best_effort_refused_first_under_pressure(make_sched):
    s = make_sched(total_memory=100, workers=1)
    ev = threading.Event()
    s.submit(ev.wait, (10,), memory_request=100, memory_limit=100)
    queued = s.submit(lambda: "q", memory_request=50, memory_limit=50)
    assert s.state(queued) == "queued"
    with pytest.raises(rust.AdmissionError, match="best-effort"):
        s.submit(lambda: "be")
    ev.set()
    assert s.result(queued, timeout=10) == "q"
    assert s.result(s.submit(lambda: "be"), timeout=10) == "be"
