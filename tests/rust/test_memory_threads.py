"""Many Python threads on one pool at once: stats return to zero, data stays intact."""

import gc
import threading

import _pygpukit_rust as rust
import numpy as np


def test_many_threads_allocating_and_freeing():
    pool = rust.MemoryPool(quota=128 * 1024 * 1024, enable_eviction=True)
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            mine = []
            for i in range(300):
                size = int(rng.choice([64, 4096, 70_000, 1_500_000, 3_000_000]))
                b = pool.allocate(size)
                payload = rng.integers(0, 256, 64, dtype=np.uint8)
                pool.copy_from_host(b, payload)
                mine.append((b, payload))
                if i % 7 == 0:
                    pool.evict(mine[rng.integers(len(mine))][0])
                if len(mine) > 6:
                    old, want = mine.pop(int(rng.integers(len(mine))))
                    got = np.zeros(64, np.uint8)
                    pool.copy_to_host(old, got)
                    assert (got == want).all()
                    old.free()
            for b, _ in mine:
                b.free()
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    gc.collect()
    s = pool.stats()
    assert (s["used"], s["blocks"], s["evicted_bytes"]) == (0, 0, 0), s
    assert s["allocations"] == 8 * 300 and s["evictions"] > 0
    pool.check_invariants()
    assert pool.free_all_cached() == s["cached"]
    assert pool.stats()["reserved"] == 0
