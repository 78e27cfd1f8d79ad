"""Host time of tiny ops through the whole native path, on the null CUDA driver
(scripts/null_libcuda.c): nothing runs on a GPU, every Python and C++ layer up to the
driver call does. Build the driver, then:

    cc -O2 -shared -fPIC -o /tmp/libnullcuda.so scripts/null_libcuda.c
    PYGPUKIT_CUDA_DRIVER=/tmp/libnullcuda.so OPENBLAS_NUM_THREADS=1 \
        python scripts/native_tiny_op.py [--profile]

(OPENBLAS_NUM_THREADS=1: NumPy's BLAS threads spin after start-up and, on a small host,
take a core from the loop: runs then split into a fast and a ~1.8x slower mode.)
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
import pygpukit as gp


def rates(cases: dict[str, Callable[[], object]], calls: int, rounds: int) -> dict[str, float]:
    """Median us/call per case over `rounds`; cases take turns so host drift hits all alike."""
    for fn in cases.values():
        for _ in range(500):
            fn()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter_ns() - t0) / calls / 1e3)
    return {name: statistics.median(v) for name, v in times.items()}


def counts() -> tuple[int, int, int]:
    """(launches, programmatic launches, capture queries) the null driver has seen."""
    lib = ctypes.CDLL(os.environ["PYGPUKIT_CUDA_DRIVER"])
    out = (ctypes.c_ulonglong * 3)()
    lib.null_counts(out)
    return out[0], out[1], out[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--matmul", type=int, default=0, help="also 1xNxN bf16 matmul of this N")
    args = ap.parse_args()
    a = gp.asarray(np.ones(1, np.float32), device="cuda:0")
    b = gp.asarray(np.ones(1, np.float32), device="cuda:0")
    stream = gp.cuda.Stream()

    def on_stream() -> None:
        with stream:
            for _ in range(args.calls):
                gp.add(a, b)

    cases: dict[str, Callable[[], object]] = {
        "gp.add(a, b)": lambda: gp.add(a, b),
        "a + b": lambda: a + b,
        "gp.exp(a)": lambda: gp.exp(a),
    }
    if args.matmul:
        n = args.matmul
        x = gp.asarray(np.ones((1, n), np.float32), device="cuda:0").astype(gp.bfloat16)
        w = gp.asarray(np.ones((n, n), np.float32), device="cuda:0").astype(gp.bfloat16)
        cases[f"matmul 1x{n}x{n} bf16"] = lambda: gp.matmul(x, w)
    before = counts()
    result = rates(cases, args.calls, args.rounds)
    with stream:
        result.update(rates({"gp.add, stream": lambda: gp.add(a, b),
                             "a + b, stream": lambda: a + b}, args.calls, args.rounds))  # fmt: skip
    after = counts()
    for name, us in result.items():
        print(f"{name:<22} {us:7.3f} us/call")
    launches, programmatic, queries = (y - x for x, y in zip(before, after, strict=True))
    print(f"driver: launches {launches}, programmatic {programmatic}, capture queries {queries}")
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20000):
            gp.add(a, b)
        on_stream()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
