"""The bandwidth paths beside PyTorch, with the alternatives they replaced, in one process:
casts (the coalesced cast kernel, the generic copy kernel, torch .to), full and row
argmax/sum/max at several split-grid sizes, row reductions with a warp or a block per row,
and the row ops (vector path, vector path with twice the threads per row, the scalar
kernel) in bfloat16, float16 and float32.

Device time by events, median of 15 samples of 10 calls (scripts/reduction_bench.py's
clocks); ratio = torch ms / ours (above 1: ours faster). Each result is checked against
torch's first. Run on the GPU machine: python scripts/bench_bandwidth.py [--out FILE]
[--only casts,reduce_cases,row_reductions,row_ops]
"""

# ruff: noqa: B023 (each lambda runs within its own loop iteration)
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pygpukit as gp
import torch

sys.path.insert(0, str(Path(__file__).parent))
from pygpukit_cuda import cast, nn, provider, reductions
from pygpukit_cuda.kernels import source
from reduction_bench import time_pgk, time_torch

N = 1 << 28
ROWS, COLS = 8192, 4096
lines: list[str] = []


def emit(text: str) -> None:
    print(text, flush=True)
    lines.append(text)


def row(label: str, ms: float, tms: float, nbytes: int, err: float) -> None:
    emit(f"| {label} | {ms:.4f} | {tms:.4f} | {nbytes / ms / 1e6:.0f} | {tms / ms:.3f} | "
         f"{err:.1e} |")  # fmt: skip


def rel_err(ours: gp.GPUArray, theirs: torch.Tensor) -> float:
    got = ours.astype(gp.float32).to_numpy().astype(np.float64)
    want = theirs.float().double().cpu().numpy()
    bad = np.isnan(got) != np.isnan(want)
    if bad.any():
        return float("inf")
    ok = ~np.isnan(want)
    return float(np.max(np.abs(got[ok] - want[ok])) / max(1e-30, np.max(np.abs(want[ok]))))


def casts(host: np.ndarray) -> None:
    g32 = gp.asarray(host, device="cuda")
    t32 = torch.from_numpy(host).cuda()
    for gdt, tdt in ((gp.bfloat16, torch.bfloat16), (gp.float16, torch.float16)):
        out = gp.empty((N,), dtype=gdt, device="cuda")
        want = t32.to(tdt)
        assert cast.cast_contiguous(g32, out)
        same = bool((out.to_numpy().view(np.uint16) == want.view(torch.int16).cpu().numpy()
                     .view(np.uint16)).all())  # fmt: skip
        tms = time_torch(lambda: t32.to(tdt))
        nb = N * (4 + 2)
        row(f"astype f32->{gdt.name} cast kernel", time_pgk(lambda: cast.cast_contiguous(g32, out)),
            tms, nb, 0.0 if same else float("inf"))  # fmt: skip
        spec = source.copy_kernel(gdt)
        row(f"astype f32->{gdt.name} generic copy",
            time_pgk(lambda: provider.run(spec, out, [g32])), tms, nb, 0.0)  # fmt: skip
        row(f"astype f32->{gdt.name} gp.astype", time_pgk(lambda: gp.astype(g32, gdt)), tms, nb,
            0.0)  # fmt: skip
        back = gp.astype(g32, gdt)
        tb = t32.to(tdt)
        row(
            f"astype {gdt.name}->f32 gp.astype",
            time_pgk(lambda: gp.astype(back, gp.float32)),
            time_torch(lambda: tb.float()),
            nb,
            rel_err(gp.astype(back, gp.float32), tb.float()),
        )


def reduce_cases(host: np.ndarray) -> None:
    g32 = gp.asarray(host, device="cuda")
    t32 = torch.from_numpy(host).cuda()
    gb, tb = gp.astype(g32, gp.bfloat16), t32.to(torch.bfloat16)
    hm = host[: ROWS * COLS].reshape(ROWS, COLS)
    gm, tm = gp.asarray(hm, device="cuda"), torch.from_numpy(hm).cuda()
    cases: list[tuple[str, Callable, Callable, int]] = [
        ("sum f32 2^28", lambda: gp.sum(g32), lambda: torch.sum(t32), 4 * N),
        ("max f32 2^28", lambda: gp.max(g32), lambda: torch.max(t32), 4 * N),
        ("argmax f32 2^28", lambda: gp.argmax(g32), lambda: torch.argmax(t32), 4 * N),
        ("argmax bf16 2^28", lambda: gp.argmax(gb), lambda: torch.argmax(tb), 2 * N),
        ("argmax f32 8192x4096 rows", lambda: gp.argmax(gm, axis=-1),
         lambda: torch.argmax(tm, -1), 4 * ROWS * COLS),
        ("max f32 8192x4096 rows", lambda: gp.max(gm, axis=-1),
         lambda: torch.amax(tm, -1), 4 * ROWS * COLS),
    ]  # fmt: skip
    for per_sm in (4, 8, 16):
        reductions.ROW_BLOCKS_PER_SM = per_sm
        for label, ours, theirs, nb in cases:
            if per_sm != 4 and "rows" in label:
                continue
            err = rel_err(ours(), theirs())
            row(f"{label} ({per_sm}/SM)", time_pgk(ours), time_torch(theirs), nb, err)
    reductions.ROW_BLOCKS_PER_SM = 4


def row_reductions(host: np.ndarray) -> None:
    """Row reductions with a warp or a block per row, by reduced length threshold."""
    hm = host[: ROWS * COLS].reshape(ROWS, COLS)
    gm, tm = gp.asarray(hm, device="cuda"), torch.from_numpy(hm).cuda()
    gb, tb = gp.astype(gm, gp.bfloat16), tm.to(torch.bfloat16)
    h2 = host[: 1024 * 32768].reshape(1024, 32768)
    g2, t2 = gp.asarray(h2, device="cuda"), torch.from_numpy(h2).cuda()
    cases: list[tuple[str, Callable, Callable, int]] = [
        ("argmax f32 8192x4096 rows", lambda: gp.argmax(gm, axis=-1),
         lambda: torch.argmax(tm, -1), 4 * ROWS * COLS),
        ("argmax bf16 8192x4096 rows", lambda: gp.argmax(gb, axis=-1),
         lambda: torch.argmax(tb, -1), 2 * ROWS * COLS),
        ("max f32 8192x4096 rows", lambda: gp.max(gm, axis=-1),
         lambda: torch.amax(tm, -1), 4 * ROWS * COLS),
        ("sum f32 8192x4096 rows", lambda: gp.sum(gm, axis=-1),
         lambda: torch.sum(tm, -1), 4 * ROWS * COLS),
        ("var f32 8192x4096 rows", lambda: gp.var(gm, axis=-1),
         lambda: torch.var(tm, -1, correction=0), 4 * ROWS * COLS),
        ("argmax f32 1024x32768 rows", lambda: gp.argmax(g2, axis=-1),
         lambda: torch.argmax(t2, -1), 4 * 1024 * 32768),
        ("sum f32 1024x32768 rows", lambda: gp.sum(g2, axis=-1),
         lambda: torch.sum(t2, -1), 4 * 1024 * 32768),
    ]  # fmt: skip
    for threshold in (2048, 8192, 65536):
        reductions.ROW_BLOCK_MIN = threshold
        for label, ours, theirs, nb in cases:
            err = rel_err(ours(), theirs())
            row(f"{label} (block from {threshold})", time_pgk(ours), time_torch(theirs), nb, err)
    reductions.ROW_BLOCK_MIN = 8192


def row_ops(host: np.ndarray) -> None:
    hm = host[: ROWS * COLS].reshape(ROWS, COLS)
    hw, hb = host[-COLS:], host[-2 * COLS : -COLS]
    base_group = nn._vector_group

    def doubled(*args: object) -> int:
        g = base_group(*args)  # type: ignore[arg-type]
        return min(2 * g, 512) if g else 0

    for gdt, tdt in ((gp.bfloat16, torch.bfloat16), (gp.float16, torch.float16),
                     (gp.float32, torch.float32)):  # fmt: skip
        gx = gp.asarray(hm, device="cuda").astype(gdt)
        gw, gb = (gp.asarray(a, device="cuda").astype(gdt) for a in (hw, hb))
        tx = torch.from_numpy(hm).cuda().to(tdt)
        tw, tb = (torch.from_numpy(a.copy()).cuda().to(tdt) for a in (hw, hb))
        nb = 2 * ROWS * COLS * gdt.itemsize
        for label, ours, theirs in (
            ("softmax", lambda: gp.softmax(gx, axis=-1), lambda: torch.softmax(tx, -1)),
            ("log_softmax", lambda: gp.log_softmax(gx, axis=-1),
             lambda: torch.log_softmax(tx, -1)),
            ("layernorm", lambda: gp.layernorm(gx, gw, gb, 1e-5),
             lambda: torch.nn.functional.layer_norm(tx, (COLS,), tw, tb, 1e-5)),
            ("rmsnorm", lambda: gp.rmsnorm(gx, gw, 1e-5),
             lambda: torch.nn.functional.rms_norm(tx, (COLS,), tw, 1e-5)),
        ):  # fmt: skip
            tms = time_torch(theirs)
            want = theirs()
            for variant in ("vector", "vector 2x threads", "scalar kernel"):
                nn.VECTOR_ROWS = variant != "scalar kernel"
                nn._vector_group = doubled if variant == "vector 2x threads" else base_group
                row(f"{label} {gdt.name} {ROWS}x{COLS} {variant}", time_pgk(ours), tms, nb,
                    rel_err(ours(), want))  # fmt: skip
            nn.VECTOR_ROWS, nn._vector_group = True, base_group


def main() -> None:
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    emit(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    emit("| case | ours ms | torch ms | ours GB/s | torch/ours | rel err vs torch |")
    emit("| --- | ---: | ---: | ---: | ---: | ---: |")
    host = np.random.default_rng(0).standard_normal(N, dtype=np.float32)
    parts = (casts, reduce_cases, row_reductions, row_ops)
    if "--only" in sys.argv:
        wanted = sys.argv[sys.argv.index("--only") + 1].split(",")
        parts = tuple(p for p in parts if p.__name__ in wanted)
    for part in parts:
        try:
            part(host)
        except Exception as exc:  # report and go on: one failure should not hide the rest
            emit(f"| {part.__name__} FAILED: {type(exc).__name__}: {exc} | | | | | |")
        torch.cuda.empty_cache()
    if out:
        Path(out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
