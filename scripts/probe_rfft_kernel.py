"""Time our rfft kernel (pygpukit_cuda.rfft_kernel) beside cuFFT and torch.fft on the GPU for
4096 x 1024 float32 rows, per choice of rows a block and blocks per SM, with a copy kernel of
the same memory traffic as the floor; each hot (one input, in L2) and cold (inputs rotating
past L2, as the benchmark times them). Also the whole gp.fft.rfft call against torch.fft.rfft.

    python scripts/probe_rfft_kernel.py
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
import torch
from pygpukit_cuda import fft_kernels, launcher, rfft_kernel
from pygpukit_cuda.device_facts import data_ptr

ROWS, N = 4096, 1024
COPIES = 5  # 5 x 16.8 MB of inputs: past the H100's 50 MB L2

COPY = r"""
extern "C" __global__ void pgk_probe_row_copy(const float2* __restrict__ x, float2* __restrict__ y,
                                              long long rows) {
  const long long row = (long long)blockIdx.x * 4 + (threadIdx.x >> 5);
  const int l = threadIdx.x & 31;
  if (row >= rows) return;
  float2 v[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) v[j] = __ldg(x + row * 512 + 32 * j + l);
#pragma unroll
  for (int j = 0; j < 16; ++j) y[row * 513 + 32 * j + l] = v[j];
  if (l == 0) y[row * 513 + 512] = v[0];
}
"""


def _time(fn: Callable[[int], object], reps: int = 200) -> float:
    """Median microseconds per call of fn(i) over bursts of `reps` calls (CUDA events)."""
    for i in range(10):
        fn(i)
    times = []
    for _ in range(9):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(reps):
            fn(i)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000 / reps)
    return float(np.median(times))


def _both(label: str, fn: Callable[[Any], object], inputs: list[Any]) -> str:
    hot = _time(lambda i: fn(inputs[0]))
    cold = _time(lambda i: fn(inputs[i % len(inputs)]))
    return f"{label:>18}: hot {hot:6.2f} us, cold {cold:6.2f} us"


def main() -> None:
    rng = np.random.default_rng(0)
    hosts = [rng.standard_normal((ROWS, N)).astype(np.float32) for _ in range(COPIES)]
    xs = [gp.asarray(a, device="cuda") for a in hosts]
    ts = [torch.from_numpy(a).cuda() for a in hosts]
    out = gp.empty((ROWS, N // 2 + 1), dtype=gp.complex64, device="cuda")
    want = np.fft.rfft(hosts[0].astype(np.float64))
    print(_both("torch.fft.rfft", torch.fft.rfft, ts), flush=True)
    print(_both("gp.fft.rfft", gp.fft.rfft, xs), flush=True)
    rfft_kernel.ENABLED = False
    print(_both("cuFFT (ours)", lambda x: fft_kernels.fft_r2c(x, out, (1,), 1.0), xs), flush=True)
    rfft_kernel.ENABLED = True
    copy = launcher.function(0, "pgk_probe_row_copy", COPY, "@QQq")

    def floor(x: Any) -> None:
        copy.launch((ROWS // 4,), (128,), (data_ptr(x), data_ptr(out), ROWS))

    print(_both("row copy (floor)", floor, xs), flush=True)
    chosen = rfft_kernel.ROWS_PER_BLOCK, rfft_kernel.BLOCKS_PER_SM
    for per, per_sm in ((4, 2), (4, 4), (8, 1), (8, 2)):
        rfft_kernel.ROWS_PER_BLOCK, rfft_kernel.BLOCKS_PER_SM = per, per_sm
        line = _both(f"ours, {per} rows x {per_sm}/SM", lambda x: rfft_kernel.run(x, out, 1.0), xs)
        rfft_kernel.run(xs[0], out, 1.0)
        err = np.abs(out.to_numpy() - want).max() / np.abs(want).max()
        print(f"{line} (err {err:.1e})", flush=True)
    rfft_kernel.ROWS_PER_BLOCK, rfft_kernel.BLOCKS_PER_SM = chosen


if __name__ == "__main__":
    main()
