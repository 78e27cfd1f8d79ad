"""Dispatch controller through the bindings: launch gate, launch order, kernel cache."""

import threading
import time

import _pygpukit_rust as rust
import pytest


def test_gate_limits_in_flight_per_stream():
    gate = rust.LaunchGate(2)
    assert gate.acquire(1) and gate.acquire(1)
    assert not gate.try_acquire(1)
    assert gate.try_acquire(2)  # streams are independent
    assert gate.acquire(1, timeout=0.02) is False
    got = []
    t = threading.Thread(target=lambda: got.append(gate.acquire(1, timeout=10)))
    t.start()
    time.sleep(0.05)  # the waiter blocks without the GIL, so this thread keeps running
    assert got == [] and gate.in_flight(1) == 2
    gate.release(1)
    t.join(10)
    assert got == [True] and gate.in_flight(1) == 2
    for s in (1, 1, 2):
        gate.release(s)
    assert gate.in_flight(1) == 0 and gate.in_flight(2) == 0
    with pytest.raises(RuntimeError):
        gate.release(1)
    gate.set_limit(5, 1)
    assert gate.limit(5) == 1 and gate.limit(1) == 2
    s = gate.stats()
    assert (s["acquired"], s["released"], s["timeouts"]) == (4, 4, 1)
    with pytest.raises(ValueError):
        rust.LaunchGate(0)


def test_launch_queue_priority_then_fifo():
    q = rust.LaunchQueue()
    seqs = [
        q.push(name, priority=p) for name, p in [("a", 0), ("b", 2), ("c", 0), ("d", 2), ("e", -1)]
    ]
    assert seqs == [0, 1, 2, 3, 4] and len(q) == 5
    assert q.peek() == (1, 2)
    popped = [q.pop() for _ in range(5)]
    assert [p[2] for p in popped] == ["b", "d", "a", "c", "e"]
    assert [p[0] for p in popped] == [1, 3, 0, 2, 4]
    assert q.pop() is None and q.next_seq == 5


def test_kernel_cache_lru_and_stats():
    cache = rust.KernelCache(capacity_bytes=300, max_entries=10)
    h = [rust.KernelCache.hash_source(f"__global__ void k{i}() {{}}") for i in range(5)]
    assert len(h[0]) == 32 and len(set(h)) == 5
    assert rust.KernelCache.hash_source(b"abc") == rust.KernelCache.hash_source("abc")
    handle = object()
    assert cache.put(h[0], b"\x01" * 100, arch="sm_90", handle=handle) == []
    cache.put(h[1], b"\x02" * 100, arch="sm_90")
    cache.put(h[2], b"\x03" * 100, arch="sm_90")
    image, got = cache.get(h[0], arch="sm_90")
    assert image == b"\x01" * 100 and got is handle
    assert cache.get(h[0], arch="sm_80") is None  # another arch is another module
    assert cache.get(h[0], arch="sm_90", options="-G") is None
    assert cache.put(h[3], b"\x04" * 50, arch="sm_90") == []  # h[1] evicted (no handle)
    assert cache.get(h[1], arch="sm_90") is None
    assert cache.lru_order() == [h[2], h[0], h[3]]
    assert cache.put(h[4], b"\x05" * 200, arch="sm_90") == [handle]  # h[2] and h[0] evicted
    with pytest.raises(ValueError):
        cache.put(h[4], b"x" * 301)
    s = cache.stats()
    assert (s["hits"], s["misses"], s["evictions"], s["entries"], s["bytes"], s["rejected"]) == (
        1,
        3,
        3,
        2,
        250,
        1,
    )
    assert cache.remove(h[3], arch="sm_90") and not cache.contains(h[3], arch="sm_90")
    cache.clear()
    assert len(cache) == 0 and cache.stats()["bytes"] == 0


def test_kernel_cache_entry_limit():
    cache = rust.KernelCache(capacity_bytes=1 << 20, max_entries=2)
    for i in range(4):
        cache.put(str(i), bytes([i]) * 10, compiler_version="12.4")
    assert cache.lru_order() == ["2", "3"]
    assert cache.stats()["evictions"] == 2
    with pytest.raises(ValueError):
        rust.KernelCache(capacity_bytes=0)
