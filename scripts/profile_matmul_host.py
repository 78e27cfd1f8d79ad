"""Where a decode-shaped matmul's host time goes: cProfile over a burst of gp.matmul calls
(1 x 2048 @ 2048 x 2048 bf16), and the same burst timed with and without the profiler."""

from __future__ import annotations

import cProfile
import pstats
import time

import numpy as np
import pygpukit as gp


def main() -> None:
    rng = np.random.default_rng(0)
    x = gp.asarray(rng.standard_normal((1, 2048)).astype(np.float32)).astype("bfloat16")
    w = gp.asarray(rng.standard_normal((2048, 2048)).astype(np.float32)).astype("bfloat16")
    for _ in range(200):
        gp.matmul(x, w)
    gp.cuda.synchronize()
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(2000):
            gp.matmul(x, w)
        gp.cuda.synchronize()
        print(f"burst: {(time.perf_counter() - t0) / 2000 * 1e6:.2f} us/call")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        gp.matmul(x, w)
    prof.disable()
    gp.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main()
