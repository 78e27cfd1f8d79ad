"""Time our rfft kernel (pygpukit_cuda.rfft_kernel) beside cuFFT and torch.fft on the GPU, per
grid choice (resident blocks per SM), for 4096 x 1024 and 3000 x 128 float32 rows.

    python scripts/probe_rfft_kernel.py
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pygpukit as gp
import torch
from pygpukit_cuda import fft_kernels, rfft_kernel


def _time(fn: Callable[[], object], reps: int = 200) -> float:
    """Median microseconds per call of fn over bursts of `reps` calls (CUDA events)."""
    for _ in range(10):
        fn()
    times = []
    for _ in range(7):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000 / reps)
    return float(np.median(times))


def _row(rows: int, n: int) -> str:
    a = np.random.default_rng(0).standard_normal((rows, n)).astype(np.float32)
    x = gp.asarray(a, device="cuda")
    out = gp.empty((rows, n // 2 + 1), dtype=gp.complex64, device="cuda")
    want = np.fft.rfft(a.astype(np.float64))
    t = torch.from_numpy(a).cuda()
    line = [f"{rows}x{n}: torch {_time(lambda: torch.fft.rfft(t)):.2f} us"]
    rfft_kernel.ENABLED = False
    line.append(f"cuFFT {_time(lambda: fft_kernels.fft_r2c(x, out, (1,), 1.0)):.2f}")
    rfft_kernel.ENABLED = True
    for per_sm in (1, 2, 3, 4, 64):
        rfft_kernel.BLOCKS_PER_SM = per_sm
        us = _time(lambda: rfft_kernel.run(x, out, 1.0))
        err = np.abs(out.to_numpy() - want).max() / np.abs(want).max()
        line.append(f"ours/{per_sm} {us:.2f} (err {err:.1e})")
    return ", ".join(line)


def main() -> None:
    chosen = rfft_kernel.BLOCKS_PER_SM
    for rows, n in ((4096, 1024), (3000, 128), (64, 1024)):
        print(_row(rows, n), flush=True)
    rfft_kernel.BLOCKS_PER_SM = chosen


if __name__ == "__main__":
    main()
