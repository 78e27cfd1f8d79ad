"""Time every autotuning candidate of the triton causal flash attention on this GPU, for
both half dtypes (16 heads x 2048 by default): what the tuner chooses between, and a check
that float16 and bfloat16 rank the candidates alike. Each is timed warm (the same q, k, v
every call: from L2) and cold (copies in turn, as the benchmark and the tuner time them).

    python pygpukit-triton/examples/attention_candidates.py [head_dim] [seq]
"""

from __future__ import annotations

import sys

import numpy as np
import pygpukit as gp
from pygpukit.triton import cold
from pygpukit.triton.kernels import attention as ka


def per_call_us(sets: list[list[gp.GPUArray]], calls: int = 48) -> float:
    q, k, v = sets[0]
    gp.sdpa_causal(q, k, v, backend="triton")  # compiles this configuration
    best = float("inf")
    for _ in range(5):  # the best of five windows: a busy moment of the GPU does not count
        start, end = gp.cuda.Event(), gp.cuda.Event()
        start.record()
        for i in range(calls):
            q, k, v = sets[i % len(sets)]
            gp.sdpa_causal(q, k, v, backend="triton")
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
    print(f"16 heads x {seq} x {d}: us per call warm / cold, (BM, BN, warps, stages, PAIR)")
    inputs = {}
    for dt in ("float16", "bfloat16"):
        qkv = [gp.asarray(x).astype(dt) for _ in range(3)]
        inputs[dt] = ([qkv], cold.sets(qkv))
    for c in configs:
        setattr(ka, name, [c])  # one candidate: taken untimed, nothing stored
        row = [f"{dt} {per_call_us(w):7.1f} / {per_call_us(k):7.1f}"
               for dt, (w, k) in inputs.items()]  # fmt: skip
        print(f"{c!s:28} " + "   ".join(row))
    setattr(ka, name, configs)


if __name__ == "__main__":
    main()
