"""Probe the skinny matmul (pygpukit_cuda/skinny.py) against cuBLASLt and PyTorch on the
decode-step products: GPU microseconds per call and the weight's streaming rate.

Each product is captured in a CUDA graph of its own, round-robin over enough copies of the
weight that they cannot sit in L2 (>= 256 MB in all, as a decode step's layers stream from
HBM), replayed under events. The same graph is made with the skinny kernel turned off
(cuBLASLt) and, when torch is installed, with torch.matmul under torch.cuda.graph. Each
row also checks the skinny result against cuBLASLt's (relative Frobenius error).

    python scripts/probe_skinny.py                  # GPU: the table, bfloat16
    python scripts/probe_skinny.py --dtype float16 --layout nk
    python scripts/probe_skinny.py --plans          # no GPU: the launch plans for an H100

Layouts: ``kn`` is a plain K x N weight (``gp.matmul(x, W)``, the launch benchmark's
decoder graph); ``nk`` is the ``.mT`` view of N x K storage (checkpoint weights, what the
llm package's Linear layers hold).
"""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: (M, K, N): the TinyLlama decode projections, the lm head, the launch benchmark's
#: decoder-graph products, and a batch-8 Llama-3-8B-sized square
SHAPES = [(1, 2048, 2048), (1, 2048, 2560), (1, 2048, 11264), (1, 5632, 2048),
          (1, 2048, 32000), (1, 1024, 1024), (1, 1024, 2816), (1, 2816, 1024),
          (8, 4096, 4096)]  # fmt: skip
H100_SMS = 132
STREAM_BYTES = 256 << 20


def copies_for(nbytes: int) -> int:
    return max(2, min(64, math.ceil(STREAM_BYTES / nbytes)))


def graph_us(calls: Sequence[Callable[[], Any]], reps: int = 3) -> float:
    """GPU microseconds per call of `calls` captured into one pygpukit graph."""
    import pygpukit as gp

    for c in calls:  # compile, plan and make the stream's counters before capturing
        c()
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        for _ in range(reps):
            for c in calls:
                c()
    g.replay()
    start, end = gp.cuda.Event(), gp.cuda.Event()
    start.record()
    for _ in range(5):
        g.replay()
    end.record()
    end.synchronize()
    return gp.cuda.get_elapsed_time(start, end) * 1e3 / (5 * reps * len(calls))


def torch_us(m: int, k: int, n: int, dtype: str, layout: str, copies: int,
             reps: int = 3) -> float | None:  # fmt: skip
    """The same products through torch.matmul in a torch CUDA graph (None: no torch)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    td = getattr(torch, dtype)
    x = torch.randn(m, k, device="cuda", dtype=td)
    if layout == "kn":
        ws = [torch.randn(k, n, device="cuda", dtype=td) for _ in range(copies)]
    else:
        ws = [torch.randn(n, k, device="cuda", dtype=td).t() for _ in range(copies)]
    outs = [torch.empty(m, n, device="cuda", dtype=td) for _ in ws]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up cuBLAS off the capture
        for w, o in zip(ws, outs, strict=True):
            torch.matmul(x, w, out=o)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            for w, o in zip(ws, outs, strict=True):
                torch.matmul(x, w, out=o)
    g.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        g.replay()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) * 1e3 / (5 * reps * copies)


def _tbs(nbytes: int, us: float) -> float:
    return nbytes / us / 1e6


def gpu_main(args: argparse.Namespace) -> None:
    import pygpukit as gp
    from pygpukit_cuda import skinny

    rng = np.random.default_rng(0)
    print(f"{'product':<20} {'lay':<3} {'MB':>6} {'skinny us':>10} {'TB/s':>5} "
          f"{'cuBLASLt':>9} {'TB/s':>5} {'torch':>8} {'TB/s':>5} {'vs Lt':>6}  "
          f"{'rel err':>8}  plan")  # fmt: skip
    for m, k, n in SHAPES:
        for layout in args.layout:
            nbytes = k * n * 2
            copies = copies_for(nbytes)
            x = gp.asarray(rng.standard_normal((m, k)).astype(np.float32)).astype(args.dtype)
            x = x.to_device("cuda")
            ws = []
            for _ in range(copies):
                shape = (k, n) if layout == "kn" else (n, k)
                w = gp.asarray(rng.standard_normal(shape).astype(np.float32) * 0.05)
                w = w.astype(args.dtype).to_device("cuda")
                ws.append(w if layout == "kn" else w.mT)
            calls = [functools.partial(gp.matmul, x, w) for w in ws]
            why = skinny.explain(x, ws[0])
            skinny.ENABLED = True
            ours = graph_us(calls)
            mine = gp.matmul(x, ws[0]).to_numpy().astype(np.float64)
            skinny.ENABLED = False
            lt = graph_us(calls)
            ref = gp.matmul(x, ws[0]).to_numpy().astype(np.float64)
            skinny.ENABLED = True
            err = np.linalg.norm(mine - ref) / np.linalg.norm(ref)
            th = torch_us(m, k, n, args.dtype, layout, copies)
            del ws, calls
            t = f"{th:8.2f} {_tbs(nbytes, th):5.2f}" if th else f"{'-':>8} {'-':>5}"
            plan = why.split("grid ")[-1] if "skinny" in why.split(":")[0] else why
            ours_t = f"{ours:10.2f} {_tbs(nbytes, ours):5.2f}"
            lt_t = f"{lt:9.2f} {_tbs(nbytes, lt):5.2f}"
            print(f"{m}x{k}x{n:<12} {layout:<3} {nbytes / 1e6:6.1f} {ours_t} {lt_t} {t} "
                  f"{lt / ours:5.2f}x  {err:8.1e}  {plan}")  # fmt: skip


def plans_main(args: argparse.Namespace) -> None:
    from pygpukit_cuda import skinny
    from pygpukit_cuda.kernels import skinny_source as ks

    for m, k, n in SHAPES:
        for layout in args.layout:
            p = skinny.plan(layout, m, n, k, H100_SMS)
            blocks = p.tiles * p.splits
            per_sm = blocks / H100_SMS
            print(f"{m}x{k}x{n:<12} {layout}: {p.tiles} tiles x {p.splits} splits of {p.kc} "
                  f"rows = {blocks} blocks ({per_sm:.1f}/SM, {ks.resident_blocks(layout, m)}"
                  f" resident), x slice {p.shared} B, workspace "
                  f"{p.workspace_floats(n) * 4} B")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    ap.add_argument("--layout", nargs="+", default=["kn", "nk"], choices=["kn", "nk"])
    ap.add_argument("--plans", action="store_true", help="no GPU: print the H100 plans")
    args = ap.parse_args()
    (plans_main if args.plans else gpu_main)(args)


if __name__ == "__main__":
    main()
