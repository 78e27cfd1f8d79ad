"""Speed of the cuda provider's reductions and fused row ops beside PyTorch (and CuPy).

Device time by events (pygpukit's own events for its launches, torch.cuda.Event for
PyTorch's and CuPy's), after a warm-up: the median over 15 samples of 10 calls each.
Bytes counted: the input read once, the output written once. `ratio` is PyTorch's time
over pygpukit's (above 1: pygpukit is faster). Each result is checked against PyTorch's
before timing. Run on the GPU machine:

    python scripts/reduction_bench.py
"""

# ruff: noqa: B023 (each lambda runs within its own loop iteration)
from __future__ import annotations

import statistics
from collections.abc import Callable

import numpy as np
import pygpukit as gp
import torch
from pygpukit_cuda import _loader
from pygpukit_cuda.device import context

REPS, SAMPLES = 10, 15


def time_pgk(fn: Callable[[], object]) -> float:
    mod, ctx = _loader.driver(), context(0)
    fn()
    ctx.synchronize()
    samples = []
    for _ in range(SAMPLES):
        start, end = mod.Event(ctx), mod.Event(ctx)
        start.record(0)
        for _ in range(REPS):
            fn()
        end.record(0)
        end.synchronize()
        samples.append(end.elapsed_since(start) / REPS)
    return statistics.median(samples)


def time_torch(fn: Callable[[], object]) -> float:
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(SAMPLES):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(REPS):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / REPS)
    return statistics.median(samples)


def main() -> None:
    try:
        import cupy as cp
    except Exception:
        cp = None
    rows = []
    rng = np.random.default_rng(0)

    def case(label: str, host: np.ndarray, nbytes: int, ours: Callable, theirs: Callable,
             cupys: Callable | None, tol: float) -> None:  # fmt: skip
        g = gp.asarray(host, device="cuda")
        t = torch.from_numpy(host).cuda()
        got = ours(g).to_numpy().astype(np.float64)
        want = theirs(t).double().cpu().numpy()
        err = float(np.max(np.abs(got - want)) / max(1e-30, float(np.max(np.abs(want)))))
        ms = time_pgk(lambda: ours(g))
        tms = time_torch(lambda: theirs(t))
        cms = float("nan")
        if cp is not None and cupys is not None:
            c = cp.asarray(host)
            cms = time_torch(lambda: cupys(c))
        rows.append((label, ms, tms, cms, nbytes / ms / 1e6, tms / ms, err, err <= tol))

    n = 1 << 28
    host = rng.random(n, dtype=np.float32)
    case("sum f32 2^28 (full)", host, n * 4, gp.sum, torch.sum, lambda c: c.sum(), 1e-5)
    del host
    m = rng.standard_normal((8192, 4096), dtype=np.float32)
    case("sum f32 8192x4096 axis=-1", m, m.nbytes, lambda g: gp.sum(g, axis=-1),
         lambda t: t.sum(-1), lambda c: c.sum(-1), 1e-4)  # fmt: skip
    case("sum f32 8192x4096 axis=0", m, m.nbytes, lambda g: gp.sum(g, axis=0),
         lambda t: t.sum(0), lambda c: c.sum(0), 1e-4)  # fmt: skip
    case("max f32 8192x4096 axis=-1", m, m.nbytes, lambda g: gp.max(g, axis=-1),
         lambda t: t.amax(-1), lambda c: c.max(-1), 0)  # fmt: skip
    case("argmax f32 8192x4096 axis=-1", m, m.nbytes, lambda g: gp.argmax(g, axis=-1),
         lambda t: t.argmax(-1), lambda c: c.argmax(-1), 0)  # fmt: skip
    case("var f32 8192x4096 axis=-1", m, m.nbytes, lambda g: gp.var(g, axis=-1),
         lambda t: t.var(-1, correction=0), lambda c: c.var(-1), 1e-4)  # fmt: skip
    for dname in ("float32", "bfloat16"):
        hm = m  # bf16 inputs are cast on the device
        tdt = getattr(torch, dname)
        gdt = getattr(gp, dname)
        nb = m.size * (4 if dname == "float32" else 2) * 2
        tol = 1e-5 if dname == "float32" else 1e-2
        w = rng.standard_normal(4096).astype(np.float32)
        b = rng.standard_normal(4096).astype(np.float32)
        gw, gb = (gp.asarray(a, device="cuda").astype(gdt) for a in (w, b))
        tw, tb = (torch.from_numpy(a).cuda().to(tdt) for a in (w, b))

        gx = gp.asarray(hm, device="cuda").astype(gdt)
        tx = torch.from_numpy(hm).cuda().to(tdt)
        for label, ours, theirs in (
            ("softmax", lambda: gp.softmax(gx, axis=-1), lambda: torch.softmax(tx, -1)),
            ("log_softmax", lambda: gp.log_softmax(gx, axis=-1),
             lambda: torch.log_softmax(tx, -1)),
            ("layernorm", lambda: gp.layernorm(gx, gw, gb, 1e-5),
             lambda: torch.nn.functional.layer_norm(tx, (4096,), tw, tb, 1e-5)),
            ("rmsnorm", lambda: gp.rmsnorm(gx, gw, 1e-5),
             lambda: torch.nn.functional.rms_norm(tx, (4096,), tw, 1e-5)),
        ):  # fmt: skip
            got = ours().astype(gp.float32).to_numpy().astype(np.float64)
            want = theirs().float().double().cpu().numpy()
            err = float(np.max(np.abs(got - want)) / float(np.max(np.abs(want))))
            ms, tms = time_pgk(ours), time_torch(theirs)
            rows.append((f"{label} {dname} 8192x4096", ms, tms, float("nan"), nb / ms / 1e6,
                         tms / ms, err, err <= tol))  # fmt: skip

    print("\n| op | pygpukit ms | torch ms | cupy ms | pygpukit GB/s | ratio torch/pgk "
          "| max rel err | ok |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for label, ms, tms, cms, gbs, ratio, err, ok in rows:
        print(
            f"| {label} | {ms:.4f} | {tms:.4f} | {cms:.4f} | {gbs:.0f} | {ratio:.3f} | "
            f"{err:.1e} | {'ok' if ok else 'FAIL'} |"
        )


if __name__ == "__main__":
    main()
