"""Eviction to host memory and transparent restore, with the data intact."""

import gc

import _pygpukit_rust as rust
import numpy as np
import pytest

KIB = 1024
MIB = 1024 * 1024


def make_pool(**kw):
    return rust.MemoryPool(**kw)


def finish(pool):
    gc.collect()
    s = pool.stats()
    assert (s["used"], s["blocks"], s["evicted_bytes"]) == (0, 0, 0), s
    pool.check_invariants()
    pool.free_all_cached()
    assert pool.stats()["reserved"] == 0


def random_bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


@pytest.mark.parametrize("size", [1000, 200 * KIB, 3 * MIB + 17])
def test_evict_restore_keeps_data(size):
    pool = make_pool(quota=64 * MIB, enable_eviction=True)
    b = pool.allocate(size)
    data = random_bytes(size, size)
    np.frombuffer(b, np.uint8)[:] = data
    assert pool.evict(b) is True and b.evicted
    assert pool.evict(b) is False
    s = pool.stats()
    assert (s["evictions"], s["used"], s["evicted_bytes"]) == (1, 0, b.capacity)
    out = np.empty(size, np.uint8)
    pool.copy_to_host(b, out)  # restores transparently
    assert not b.evicted and (out == data).all()
    assert pool.stats()["restores"] == 1
    assert (np.frombuffer(b, np.uint8) == data).all()
    b.free()
    finish(pool)


def test_pointer_may_change_after_restore():
    pool = make_pool(enable_eviction=True)
    a = pool.allocate(4096)
    old = a.ptr
    pool.copy_from_host(a, random_bytes(4096, 1))
    pool.evict(a)
    squatter = pool.allocate(4096)  # takes a's old memory from the cache
    assert squatter.ptr == old
    assert a.ptr != old  # restored elsewhere
    out = bytearray(4096)
    pool.copy_to_host(a, out)
    assert bytes(out) == random_bytes(4096, 1).tobytes()
    a.free()
    squatter.free()
    finish(pool)


def test_ladder_evicts_least_recently_used():
    pool = make_pool(quota=96 * KIB, enable_eviction=True)
    a, b = pool.allocate(40_000), pool.allocate(40_000)
    pool.copy_from_host(a, random_bytes(40_000, 2))
    pool.copy_from_host(b, random_bytes(40_000, 3))
    pool.touch(a)  # b becomes the LRU block
    c = pool.allocate(40_000)
    assert b.evicted and not a.evicted and not c.evicted
    out = np.empty(40_000, np.uint8)
    pool.copy_to_host(b, out)  # restoring b must evict a (LRU now)
    assert (out == random_bytes(40_000, 3)).all()
    assert a.evicted and not b.evicted
    pool.copy_to_host(a, out)
    assert (out == random_bytes(40_000, 2)).all()
    s = pool.stats()
    assert (s["evictions"], s["restores"]) == (3, 2), s
    for x in (a, b, c):
        x.free()
    finish(pool)


def test_without_eviction_the_ladder_fails():
    pool = make_pool(quota=64 * KIB, enable_eviction=False)
    a = pool.allocate(40_000)
    with pytest.raises(MemoryError, match="quota 65536 bytes"):
        pool.allocate(40_000)
    assert pool.stats()["evictions"] == 0
    a.free()
    finish(pool)


def test_ladder_releases_cache_first():
    pool = make_pool(quota=64 * KIB, enable_eviction=True)
    pool.allocate(32 * KIB).free()
    b = pool.allocate(48 * KIB)
    s = pool.stats()
    assert (s["cached"], s["device_frees"], s["evictions"]) == (0, 1, 0)
    b.free()
    finish(pool)


def test_evict_lru_by_bytes():
    pool = make_pool()
    blocks = [pool.allocate(4096) for _ in range(4)]
    pool.touch(blocks[0])
    assert pool.evict_lru(5000) == 8192
    assert [b.evicted for b in blocks] == [False, True, True, False]
    blocks[1].free()  # freeing an evicted block drops its host copy
    assert pool.stats()["evicted_bytes"] == 4096
    for b in blocks:
        b.free()
    finish(pool)
