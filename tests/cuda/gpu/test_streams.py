"""gp.cuda streams and events: current stream per thread, ordering, timing, and the
stream-ordered pool (a block freed on a stream is reused on that stream only)."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


def test_namespace_and_current_stream() -> None:
    null = gp.cuda.current_stream()
    assert null.ptr == 0
    s = gp.cuda.Stream(non_blocking=True)
    assert s.ptr != 0
    with s:
        assert gp.cuda.current_stream() is s
        seen: list[int] = []
        t = threading.Thread(target=lambda: seen.append(gp.cuda.current_stream().ptr))
        t.start()
        t.join()
        assert seen == [0]  # another thread keeps its own current stream
    assert gp.cuda.current_stream().ptr == 0


def test_ops_on_a_non_blocking_stream_and_events() -> None:
    s = gp.cuda.Stream(non_blocking=True)
    h = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    start, end = gp.cuda.Event(), gp.cuda.Event()
    with s:
        x = gp.asarray(h)
        start.record()
        y = x
        for _ in range(20):
            y = y * 1.0001 + 0.5
        z = gp.sort(y[:4096])
        end.record()
        got = y.to_numpy()  # waits for s only
        del x, y
    end.synchronize()
    assert end.query() and s.query()
    assert gp.cuda.get_elapsed_time(start, end) > 0
    want = h.copy()
    for _ in range(20):
        want = want * np.float32(1.0001) + np.float32(0.5)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_array_equal(z.to_numpy(), np.sort(got[:4096]))
    del z
    release()


def release() -> None:
    """Let the arrays of a test go and wait, so their stream-held blocks are back."""
    gc.collect()
    gp.cuda.synchronize()


def test_wait_event_orders_two_streams() -> None:
    a, b = gp.cuda.Stream(non_blocking=True), gp.cuda.Stream(non_blocking=True)
    with a:
        x = gp.zeros((1 << 22,), dtype="float32")
        for _ in range(10):
            x += 1.0
        ev = a.record()
    b.wait_event(ev)
    with b:
        y = x * 2.0
        got = y.to_numpy()
    assert float(got.min()) == float(got.max()) == 20.0
    del x, y
    release()


def test_a_block_freed_on_a_busy_stream_is_reused_there_and_not_elsewhere() -> None:
    s = gp.cuda.Stream(non_blocking=True)
    used = gp.memory.stats("cuda")["used"]
    with s:
        x = gp.ones((1 << 22,), dtype="float32")
        for _ in range(50):
            x = x + 1.0
        ptr = x.buffer.ptr
        del x  # the stream may still be running the adds: back to s's cache at once
        assert gp.memory.stats("cuda")["used"] == used
        before = gp.memory.stats("cuda")
        y = gp.empty((1 << 22,), dtype="float32")  # s's own cache serves it: no new memory
        after = gp.memory.stats("cuda")
        assert after["device_allocs"] == before["device_allocs"]
        assert after["reuses"] == before["reuses"] + 1
    z = gp.empty((1 << 22,), dtype="float32")  # the default stream never gets s's block
    assert z.buffer.ptr != ptr and z.buffer.ptr != y.buffer.ptr
    s.synchronize()
    assert gp.cuda.pending_frees() == 0
    del y, z


def test_priority_stream() -> None:
    s = gp.cuda.Stream(priority=-1)
    with s:
        v = gp.arange(10) * 2
    np.testing.assert_array_equal(v.to_numpy(), np.arange(10) * 2)
    del v
    release()
