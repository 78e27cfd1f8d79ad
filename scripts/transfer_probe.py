"""Probe the StreamCopier's settings on a GPU: direct (driver-staged) against our pinned
staging at small sizes, and the number of host threads at large ones. Prints GB/s per
(size, setting, direction); H2D is timed to completion (a synchronize after each copy).

    python scripts/transfer_probe.py [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import _pygpukit_rust as rust
import numpy as np
import pygpukit as gp
from pygpukit_cuda.device import allocator

SETTINGS = {
    "direct": {"direct_below": 1 << 40},
    "staged t1": {"direct_below": 0, "threads": 1},
    "staged t2": {"direct_below": 0, "threads": 2},
    "staged t4": {"direct_below": 0, "threads": 4},
    "staged t8": {"direct_below": 0, "threads": 8},
    "staged t16": {"direct_below": 0, "threads": 16},
    "default": {},
}


def per_call_s(fn: Callable[[], Any], budget_s: float = 0.4) -> float:
    """Median seconds per call of `fn` (a few samples within the budget)."""
    samples = []
    deadline = time.perf_counter() + budget_s
    while len(samples) < 3 or (time.perf_counter() < deadline and len(samples) < 50):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return float(np.median(samples))


def measure(c: Any, block: Any, h: np.ndarray, out: np.ndarray) -> tuple[float, float]:
    """(H2D, D2H) seconds per copy of `h` with copier `c`, checked exact first."""
    for _ in range(3):
        c.upload(block, 0, h)
        c.download(block, 0, out)
    assert np.array_equal(out, h)

    def h2d() -> None:
        c.upload(block, 0, h)
        gp.cuda.synchronize()

    return per_call_s(h2d), per_call_s(lambda: c.download(block, 0, out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    pool = allocator(0).pool
    small = [4 << 10, 64 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20]
    large = [16 << 20, 256 << 20] if not args.quick else [16 << 20]
    print("| bytes | setting | H2D GB/s | D2H GB/s |")
    print("| ---: | --- | ---: | ---: |")
    for n in small + large:
        block = pool.allocate(n)
        h = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
        out = np.empty_like(h)
        if n in small:
            names = ["direct", "staged t1", "staged t8", "default"]
        else:
            names = ["direct", "staged t4", "staged t8", "staged t16", "default"]
        for name in names:
            c = rust.StreamCopier(pool, **SETTINGS[name])
            up, down = measure(c, block, h, out)
            print(f"| {n} | {name} | {n / up / 1e9:.2f} | {n / down / 1e9:.2f} |", flush=True)
            c.trim()
        block.free()


if __name__ == "__main__":
    main()
