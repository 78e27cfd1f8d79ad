"""Matrix products and the attention kernel of the cuda provider against PyTorch (and CuPy)
in the same process: device time by CUDA events, the median of several repeats, random
data; prints one table (ratios are pygpukit's rate over the peer's: >1 is faster).

    python scripts/bench_matmul.py                  # 4096 and 8192, bf16/fp16/tf32/fp32
    python scripts/bench_matmul.py --sizes 1024 2048 --no-sdpa
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pygpukit as gp
from pygpukit_cuda import _loader, cublaslt
from pygpukit_cuda.device import context

CASES = [("bfloat16", False), ("float16", False), ("float32", True), ("float32", False)]


def time_ours(fn: Callable[[], object], reps: int) -> float:
    """Median ms per call of `fn`, by the driver's events around `reps` calls."""
    mod, ctx = _loader.driver(), context(0)
    for _ in range(3):
        fn()
    ctx.synchronize()
    samples = []
    for _ in range(7):
        start, end = mod.Event(ctx), mod.Event(ctx)
        start.record(0)
        for _ in range(reps):
            fn()
        end.record(0)
        end.synchronize()
        samples.append(end.elapsed_since(start) / reps)
    return statistics.median(samples)


def time_torch(fn: Callable[[], object], reps: int) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(7):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / reps)
    return statistics.median(samples)


def host(rng: np.random.Generator, shape: tuple[int, ...], name: str) -> np.ndarray:
    x = rng.standard_normal(shape, dtype=np.float32)
    return x.astype(ml_dtypes.bfloat16) if name == "bfloat16" else x.astype(name)


def to_torch(x: np.ndarray):  # type: ignore[no-untyped-def]
    import torch

    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(x).cuda()


def rel_err(ours: gp.GPUArray, ref) -> float:  # type: ignore[no-untyped-def]
    import torch

    a = to_torch(np.ascontiguousarray(ours.to_numpy())).double()
    b = ref.double()
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b))


def bench_matmul(n: int, name: str, tf32: bool, rows: list[list[str]]) -> None:
    import torch

    rng = np.random.default_rng(n)
    ha, hb = host(rng, (n, n), name), host(rng, (n, n), name)
    ga, gb = gp.asarray(ha, device="cuda"), gp.asarray(hb, device="cuda")
    ta, tb = to_torch(ha), to_torch(hb)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    reps = 10 if n >= 8192 else 30
    with gp.config.use(allow_tf32=tf32):
        ours = time_ours(lambda: gp.matmul(ga, gb), reps)
        out = gp.matmul(ga, gb)
    theirs = time_torch(lambda: torch.matmul(ta, tb), reps)
    # accuracy against a float64 product of the same inputs (computed on the GPU)
    err = rel_err(out, torch.matmul(ta.double(), tb.double()))
    flops = 2.0 * n**3
    label = ("tf32" if tf32 else "fp32 exact") if name == "float32" else name
    cells = [
        f"matmul {label}",
        f"{n}",
        f"{ours:.3f}",
        f"{flops / ours / 1e9:.1f}",
        f"{theirs:.3f}",
        f"{flops / theirs / 1e9:.1f}",
        f"{theirs / ours:.3f}",
        f"{err:.1e}",
    ]
    cupy_ratio = "-"
    if name in ("float16", "float32") and not tf32:
        try:
            import cupy as cp

            ca, cb = cp.asarray(ha), cp.asarray(hb)
            # CuPy runs on the legacy default stream, which torch's events also see
            t_cp = time_torch(lambda: cp.matmul(ca, cb), reps)
            cupy_ratio = f"{t_cp / ours:.3f}"
        except Exception:
            pass
    rows.append([*cells, cupy_ratio])


def bench_sdpa(rows: list[list[str]]) -> None:
    import torch.nn.functional as F

    b, h, s, d = 4, 16, 1024, 64
    rng = np.random.default_rng(0)
    hq, hk, hv = (host(rng, (b, h, s, d), "bfloat16") for _ in range(3))
    gq, gk, gv = (gp.asarray(x, device="cuda") for x in (hq, hk, hv))
    tq, tk, tv = (to_torch(x) for x in (hq, hk, hv))
    ours = time_ours(lambda: gp.sdpa_causal(gq, gk, gv), 5)
    theirs = time_torch(lambda: F.scaled_dot_product_attention(tq, tk, tv, is_causal=True), 5)
    ref = F.scaled_dot_product_attention(tq.float(), tk.float(), tv.float(), is_causal=True)
    err = rel_err(gp.sdpa_causal(gq, gk, gv), ref)
    flops = 4.0 * b * h * s * s * d / 2  # causal: half the score matrix
    rows.append([f"sdpa_causal bf16 B{b} H{h} D{d}", f"{s}", f"{ours:.3f}",
                 f"{flops / ours / 1e9:.1f}", f"{theirs:.3f}", f"{flops / theirs / 1e9:.1f}",
                 f"{theirs / ours:.3f}", f"{err:.1e}", "-"])  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[4096, 8192],
        help="square sizes (default: 4096 8192)",
    )
    p.add_argument("--no-sdpa", action="store_true", help="skip the attention row")
    args = p.parse_args()
    import torch

    print(f"# {context(0).name()}; {cublaslt.status()}; torch {torch.__version__}")
    rows: list[list[str]] = []
    for n in args.sizes:
        for name, tf32 in CASES:
            bench_matmul(n, name, tf32, rows)
    if not args.no_sdpa:
        bench_sdpa(rows)
    head = [
        "op",
        "n",
        "pgk ms",
        "pgk TFLOP/s",
        "torch ms",
        "torch TFLOP/s",
        "vs torch",
        "rel err",
        "vs cupy",
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print(" | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
