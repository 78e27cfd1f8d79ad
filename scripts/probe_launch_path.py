"""Probe the launch path on a GPU: for the decode-shaped bf16 products, host time per call
in a burst and GPU time per call (events), ours and PyTorch's; and where a 1-element add's
host time goes (cProfile). `--trial` turns on cuBLASLt's timed candidate trial."""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time

import numpy as np

SHAPES = ((1, 2048, 2048), (1, 4096, 4096), (64, 2048, 2048))


def burst(fn, sync, n=300) -> float:  # type: ignore[no-untyped-def]
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t0) / n * 1e6


def gpu_time(fn, record, elapsed, sync, n=300) -> float:  # type: ignore[no-untyped-def]
    sync()
    a, b = record(), None
    for _ in range(n):
        fn()
    b = record()
    sync()
    return elapsed(a, b) / n * 1e3


def main() -> None:
    import pygpukit as gp
    import torch
    from pygpukit_cuda import matmul as mm

    rng = np.random.default_rng(0)
    for m, k, n in SHAPES:
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        gx, gw = gp.asarray(x).astype("bfloat16"), gp.asarray(w).astype("bfloat16")
        tx, tw = torch.from_numpy(x).cuda().bfloat16(), torch.from_numpy(w).cuda().bfloat16()
        ours = lambda gx=gx, gw=gw: gp.matmul(gx, gw)  # noqa: E731
        theirs = lambda tx=tx, tw=tw: tx @ tw  # noqa: E731
        for _ in range(50):
            ours(), theirs()

        def rec() -> object:
            e = gp.cuda.Event()
            e.record()
            return e

        def trec() -> object:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e

        host = min(burst(ours, gp.cuda.synchronize) for _ in range(5))
        thost = min(burst(theirs, torch.cuda.synchronize) for _ in range(5))
        gpu = min(gpu_time(ours, rec, gp.cuda.get_elapsed_time, gp.cuda.synchronize)
                  for _ in range(3))  # fmt: skip
        tgpu = min(gpu_time(theirs, trec, lambda a, b: a.elapsed_time(b), torch.cuda.synchronize)
                   for _ in range(3))  # fmt: skip
        plan = next(iter(r for r in mm._ready.values()), None)
        print(f"{m}x{k}x{n}: ours {host:.2f} us/call host-burst, {gpu:.2f} us GPU-burst | "
              f"torch {thost:.2f} / {tgpu:.2f} | plan {plan.plan if plan else None}")  # fmt: skip
        mm._ready.clear()
    a = gp.asarray(np.array([1.5], dtype=np.float32))
    b = gp.asarray(np.array([2.25], dtype=np.float32))
    for _ in range(1000):
        gp.add(a, b)
    add = lambda: gp.add(a, b)  # noqa: E731
    print(f"add: {min(burst(add, gp.cuda.synchronize, 5000) for _ in range(5)):.2f} us")
    s = gp.cuda.Stream(non_blocking=True)
    with s:
        print(f"add on a stream: {min(burst(add, s.synchronize, 5000) for _ in range(5)):.2f} us")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(5000):
        gp.add(a, b)
    prof.disable()
    gp.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    if "--trial" in sys.argv:
        os.environ["PYGPUKIT_CUBLASLT_TRIAL"] = "1"
        from pygpukit_cuda import cublaslt

        cublaslt.TRIAL_MIN_FLOPS = 0
    main()
