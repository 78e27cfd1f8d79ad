"""Benchmark (not a test): MemoryPool allocate+free latency against numpy.empty.

Run: python rust/bench_pool.py [--iters N]
Each figure is the best of several repeats of N allocate/free pairs, in ns per pair.
"""

import argparse
import time

import _pygpukit_rust as rust
import numpy as np

SIZES = [64, 4 * 1024, 64 * 1024, 1024 * 1024, 16 * 1024 * 1024]


def best_ns(fn, iters, repeats=7):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn(iters)
        best = min(best, (time.perf_counter_ns() - t0) / iters)
    return best


def pool_loop(pool, n):
    def run(iters):
        alloc = pool.allocate
        for _ in range(iters):
            alloc(n).free()

    return run


def pool_drop_loop(pool, n):
    def run(iters):
        alloc = pool.allocate
        for _ in range(iters):
            alloc(n)  # returned to the pool when the handle is dropped

    return run


def numpy_loop(n):
    def run(iters):
        empty, u8 = np.empty, np.uint8
        for _ in range(iters):
            empty(n, u8)

    return run


def human(n):
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n} {unit}"
        n //= 1024
    return f"{n} GiB"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20000)
    args = ap.parse_args()
    pool = rust.MemoryPool()
    print(
        f"{'size':>8} | {'pool alloc+free':>16} | {'pool alloc+drop':>16} | {'numpy.empty':>12} | "
        f"{'free/numpy':>10} | {'drop/numpy':>10}"
    )
    print("-" * 88)
    for n in SIZES:
        iters = args.iters if n < (1 << 20) else max(args.iters // 10, 100)
        p = best_ns(pool_loop(pool, n), iters)
        d = best_ns(pool_drop_loop(pool, n), iters)
        q = best_ns(numpy_loop(n), iters)
        times = f"{p:>13.0f} ns | {d:>13.0f} ns | {q:>9.0f} ns"
        print(f"{human(n):>8} | {times} | {p / q:>9.2f}x | {d / q:>9.2f}x")
    s = pool.stats()
    print(
        f"\npool after the run: used={s['used']} cached={s['cached']} "
        f"allocations={s['allocations']} reuses={s['reuses']} device_allocs={s['device_allocs']}"
    )


if __name__ == "__main__":
    main()
