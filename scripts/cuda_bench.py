"""A first look at the CUDA backend's elementwise speed: effective bandwidth of a few ops.

Bytes counted: each input read once, the output written once. Timed with CUDA events
around many launches after a warm-up; the median of 5 repeats. Run on the GPU machine
(scripts/device_round.sh does).
"""

from __future__ import annotations

import statistics

import numpy as np
import pygpukit as gp
from pygpukit_cuda import _loader
from pygpukit_cuda.device import context

N = 1 << 26


def timed(fn, reps: int = 20) -> float:  # type: ignore[no-untyped-def]
    """Median milliseconds of one call of `fn` (device time, by events)."""
    mod = _loader.driver()
    ctx = context(0)
    fn()
    ctx.synchronize()
    samples = []
    for _ in range(5):
        start, end = mod.Event(ctx), mod.Event(ctx)
        start.record(0)
        for _ in range(reps):
            fn()
        end.record(0)
        end.synchronize()
        samples.append(end.elapsed_since(start) / reps)
    return statistics.median(samples)


def main() -> None:
    rng = np.random.default_rng(0)
    a = gp.asarray(rng.standard_normal(N, dtype=np.float32), device="cuda")
    b = gp.asarray(rng.standard_normal(N, dtype=np.float32), device="cuda")
    a2, b2 = a.reshape(8192, 8192), b.reshape(8192, 8192)
    h = a.astype("bfloat16")
    cases = [
        ("add f32 contiguous", lambda: a + b, 12 * N),
        ("add f32 (x, x.T) strided", lambda: a2 + b2.T, 12 * N),
        ("add f32 + scalar", lambda: a + 1.5, 8 * N),
        ("add f32 row broadcast", lambda: a2 + b2[:1], 8 * N),
        ("exp bf16", lambda: gp.exp(h), 4 * N),
        ("astype f32->bf16", lambda: a.astype("bfloat16"), 6 * N),
        ("copy f32 transposed", lambda: a2.T.copy(), 8 * N),
    ]
    print(f"{'op':28} {'ms':>8} {'GB/s':>8}   ({N} elements)")
    for name, fn, nbytes in cases:
        ms = timed(fn)
        print(f"{name:28} {ms:8.3f} {nbytes / ms / 1e6:8.0f}")


if __name__ == "__main__":
    main()
