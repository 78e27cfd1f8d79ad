"""An op that runs other ops inside a scheduler task holds the launch gate for the whole
outer op: the inner ops' ends neither give the device back nor end its charge."""

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


def test_an_inner_launch_leaves_the_outer_one_open_and_charged(make_sched):
    s = make_sched(workers=1, launch_rate=0)

    def body():
        outer = rust.task_launch_begin()
        inner = rust.task_launch_begin()  # an op run by the op
        inner_charge = rust.task_launch_end(inner)
        rust.spin_ns(5 * MS)  # the rest of the outer op
        return inner_charge, rust.task_launch_end(outer)

    tid = s.submit(body, memory_request=0)
    inner_charge, outer_charge = s.result(tid, timeout=10)
    assert inner_charge == 0, "the inner end charged its own time"
    assert outer_charge >= 5 * MS, "the outer end charged nothing: the inner end closed it"
    st = s.stats(tid)
    assert st["launches"] == 2 and st["busy_ns"] >= 5 * MS


def test_a_composite_op_keeps_the_device_until_it_ends(make_sched):
    """Two tasks on one device slot: while task A's composite op (the core's Python gate
    around a kernel that runs another gated kernel) is past its inner op, task B's launch
    waits for the outer op's end."""
    from pygpukit._ops._core import _gated

    s = make_sched(workers=2, launch_rate=0, fair_share_idle_s=0.05)
    inner_done = threading.Event()
    times = {}

    def inner_kernel():
        rust.spin_ns(MS)

    def composite_kernel():
        _gated(inner_kernel)()
        inner_done.set()
        rust.spin_ns(60 * MS)  # the outer op's own work after its inner op
        times["outer_end"] = time.perf_counter()

    def a():
        _gated(composite_kernel)()

    def b():
        assert inner_done.wait(10)
        rust.task_launch_end(rust.task_launch_begin(), 0)
        times["b_granted"] = time.perf_counter()

    ta = s.submit(a, bandwidth=0.5, memory_request=0)
    tb = s.submit(b, bandwidth=0.5, memory_request=0)
    s.result(ta, timeout=10)
    s.result(tb, timeout=10)
    # B asked right after the inner op's end; it is granted once the outer op has ended
    assert times["b_granted"] >= times["outer_end"] - 0.005, times
    assert s.stats(ta)["busy_ns"] >= 60 * MS
