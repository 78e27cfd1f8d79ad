"""Time every autotuning candidate of the triton causal flash attention on this GPU, for
both half dtypes (16 heads x 2048 by default): what the tuner chooses between, and a check
that float16 and bfloat16 rank the candidates alike.

    python pygpukit-triton/examples/attention_candidates.py [head_dim] [seq]
"""

from __future__ import annotations

import sys

import numpy as np
import pygpukit as gp
from pygpukit.triton.kernels import attention as ka


def per_call_us(q: gp.GPUArray, calls: int = 50) -> float:
    gp.sdpa_causal(q, q, q, backend="triton")  # compiles this configuration
    best = float("inf")
    for _ in range(5):  # the best of five windows: a busy moment of the GPU does not count
        start, end = gp.cuda.Event(), gp.cuda.Event()
        start.record()
        for _ in range(calls):
            gp.sdpa_causal(q, q, q, backend="triton")
        end.record()
        end.synchronize()
        best = min(best, gp.cuda.get_elapsed_time(start, end) * 1e3 / calls)
    return best


def main() -> None:
    d = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    seq = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
    name = "CONFIGS_D64" if d <= 64 else "CONFIGS_D128"
    configs = list(getattr(ka, name))
    x = np.random.default_rng(0).standard_normal((1, 16, seq, d)).astype(np.float32)
    print(f"16 heads x {seq} x {d}: us per call, (BM, BN, warps, stages, SCHED, LAZY)")
    for c in configs:
        setattr(ka, name, [c])  # one candidate: taken untimed, nothing stored
        row = [per_call_us(gp.asarray(x).astype(dt)) for dt in ("float16", "bfloat16")]
        print(f"{c!s:36} float16 {row[0]:8.1f}   bfloat16 {row[1]:8.1f}")
    setattr(ka, name, configs)


if __name__ == "__main__":
    main()
