"""Transfer engine through the bindings: round trips, priorities, errors, waiting."""

import gc
import threading

import _pygpukit_rust as rust
import numpy as np
import pytest


@pytest.fixture
def pool():
    p = rust.MemoryPool(quota=64 * 1024 * 1024, enable_eviction=True)
    yield p
    gc.collect()
    s = p.stats()
    assert (s["used"], s["blocks"]) == (0, 0), s
    p.check_invariants()
    p.free_all_cached()
    assert p.stats()["reserved"] == 0


def test_round_trip_with_eviction_in_between(pool):
    engine = rust.TransferEngine(pool)
    block = pool.allocate(300_000)
    data = np.random.default_rng(5).integers(0, 256, 300_000, dtype=np.uint8)
    h = engine.copy_to_device(block, data, priority=1)
    assert h.wait(timeout=10) is True
    assert h.done() and h.status == "done" and h.elapsed_ns >= 0 and h.nbytes == 300_000
    pool.evict(block)
    out = np.zeros(300_000, np.uint8)
    h2 = engine.copy_to_host(block, out)
    assert h2.wait() is True
    assert (out == data).all() and not block.evicted
    s = engine.stats()
    assert (s["completed"], s["bytes_to_device"], s["bytes_to_host"], s["async_copies"]) == (
        2,
        300_000,
        300_000,
        False,
    )
    block.free()


def test_priorities_overtake_queued_jobs(pool):
    engine = rust.TransferEngine(pool, paused=True)
    block = pool.allocate(16)
    prios = [0, 5, -3, 5, 10, 0]
    handles = [engine.copy_to_device(block, bytes([i]), priority=p) for i, p in enumerate(prios)]
    assert engine.pending == 6
    assert handles[0].wait(timeout=0.05) is False and not handles[0].done()
    assert handles[0].elapsed_ns is None and handles[0].order is None
    engine.resume()
    assert engine.synchronize(timeout=10)
    assert [h.order for h in handles] == [3, 1, 5, 2, 0, 4]
    out = bytearray(1)
    pool.copy_to_host(block, out)
    assert out[0] == 2  # the -3 job ran last
    block.free()


def test_errors_reach_the_waiter(pool):
    engine = rust.TransferEngine(pool, paused=True)
    block = pool.allocate(64)
    h = engine.copy_to_device(block, b"\x01" * 64)
    block.free()
    engine.resume()
    with pytest.raises(rust.TransferError, match="freed"):
        h.wait(timeout=10)
    assert h.status == "failed" and engine.stats()["failed"] == 1
    other = pool.allocate(8)
    with pytest.raises(ValueError, match="outside"):
        engine.copy_to_device(other, b"x" * 9)
    with pytest.raises(ValueError):
        engine.copy_to_host(other, bytearray(4), offset=6)
    with pytest.raises(ValueError):
        rust.TransferEngine(rust.MemoryPool()).copy_to_device(other, b"x")
    with pytest.raises(ValueError):
        h.wait(timeout=-1)
    other.free()


def test_wait_releases_the_gil(pool):
    engine = rust.TransferEngine(pool, paused=True)
    block = pool.allocate(32)
    h = engine.copy_to_device(block, b"z" * 32)
    waited = []
    t = threading.Thread(target=lambda: waited.append(h.wait(timeout=10)))
    t.start()
    # This thread keeps running Python while the other waits: the GIL was released.
    for _ in range(1000):
        pass
    engine.resume()
    t.join(10)
    assert waited == [True]
    block.free()


def test_output_buffer_is_held_until_done(pool):
    engine = rust.TransferEngine(pool, paused=True)
    block = pool.allocate(1024)
    pool.copy_from_host(block, b"\x07" * 1024)
    out = bytearray(1024)
    h = engine.copy_to_host(block, out)
    with pytest.raises(BufferError):
        out.extend(b"x")  # exported to the queued job
    engine.resume()
    h.wait()
    del h
    gc.collect()
    assert out == b"\x07" * 1024
    out.extend(b"x")  # released once the job finished and was dropped
    block.free()
