"""Every cuBLASLt candidate of decode-shaped bf16 products, timed cold (L2 flushed before
each run, as in a decode step that streams each layer's weights once; events around the
run alone), beside the candidate the trial picked, on a GPU.

    python scripts/probe_matmul_algos.py [--shapes 1x4096x4096 ...] [--results 24]

A shape MxKxN is x (M, K) @ w (K, N); each is probed with w contiguous and with w a
transposed view of an (N, K) matrix (the layout of a checkpoint's weights).
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import numpy as np

DEFAULT = ["1x1024x1024", "1x1024x2816", "1x2816x1024", "1x2048x2560", "1x2048x2048",
           "1x2048x11264", "1x5632x2048", "1x4096x6144", "1x4096x4096", "1x4096x28672",
           "1x14336x4096"]  # fmt: skip


def probe(gp: Any, shape: str, transposed: bool, scratch: Any) -> None:
    from pygpukit.core import dtypes as dt
    from pygpukit.ops.elementwise import add_inplace
    from pygpukit_cuda import cublaslt, streams
    from pygpukit_cuda.device_facts import data_ptr

    m, k, n = (int(v) for v in shape.split("x"))
    rng = np.random.default_rng(0)
    x = gp.asarray(rng.standard_normal((m, k)).astype(np.float32), device="cuda").astype("bfloat16")
    if transposed:
        w = gp.asarray(rng.standard_normal((n, k)).astype(np.float32), device="cuda")
        w = w.astype("bfloat16").mT
    else:
        w = gp.asarray(rng.standard_normal((k, n)).astype(np.float32), device="cuda")
        w = w.astype("bfloat16")
    out = gp.empty((m, n), dtype="bfloat16", device="cuda")
    item = 2
    a_str = (x.strides[0] // item, x.strides[1] // item)
    b_str = (w.strides[0] // item, w.strides[1] // item)
    lt = cublaslt.library()
    cublaslt._plans.clear()
    plan = cublaslt.plan_for(lt, 0, dt.bfloat16, False, m, n, k, data_ptr(x), a_str,
                             data_ptr(w), b_str, data_ptr(out))  # fmt: skip
    if plan is None:
        print(f"{shape} {'T' if transposed else 'N'}: no plan")
        return
    handle = streams.current(0).ptr
    ws = cublaslt._pool_for(streams.current(0), 0).allocate(max(plan.workspace_sizes) or 1, handle)
    start, end = streams.Event(device=0), streams.Event(device=0)

    def run(i: int) -> None:
        plan.run(i, handle, data_ptr(w), data_ptr(x), data_ptr(out), ws.ptr)

    print(f"\n{shape} w {'(N,K)^T' if transposed else '(K,N)'}: trial chose {plan.choice}")
    print(f"{'cand':>4} {'ws KiB':>8} {'cold us':>8}")
    for i, size in enumerate(plan.workspace_sizes):
        try:
            run(i)
            colds = []
            for _ in range(9):
                add_inplace(scratch, 1.0)
                start.record()
                run(i)
                end.record()
                end.synchronize()
                colds.append(streams.get_elapsed_time(start, end) * 1e3)
            cold = statistics.median(colds)
        except RuntimeError as exc:
            print(f"{i:>4} {size // 1024:>8} failed: {exc}")
            continue
        print(f"{i:>4} {size // 1024:>8} {cold:>8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="*", default=DEFAULT)
    ap.add_argument("--results", type=int, default=None, help="heuristic results per plan")
    args = ap.parse_args()
    import pygpukit as gp
    from pygpukit_cuda import cublaslt

    if args.results:
        cublaslt.HEURISTIC_RESULTS = args.results

    scratch = gp.zeros((48 << 20,), dtype="float32", device="cuda")  # 192 MB: past any L2
    for shape in args.shapes:
        for transposed in (False, True):
            probe(gp, shape, transposed, scratch)


if __name__ == "__main__":
    main()
