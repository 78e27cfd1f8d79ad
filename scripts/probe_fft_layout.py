"""Device microseconds of one cuFFT execution planned with the basic layout (NULL embeddings)
and with the same packed layout spelt out as an advanced one, beside torch.fft (needs a GPU).

    python scripts/probe_fft_layout.py [--calls 200]

gp.fft plans contiguous operands with the basic layout, as torch does; this shows what that
choice is worth per shape, with nothing else (no allocation, no Python dispatch) timed.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np


def _time_us(fn: Any, calls: int, ctx: Any, mod: Any) -> float:
    start, end = mod.Event(ctx, True), mod.Event(ctx, True)
    for _ in range(3):
        fn()
    start.record(0)
    for _ in range(calls):
        fn()
    end.record(0)
    end.synchronize()
    return float(end.elapsed_since(start)) * 1e3 / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    from pygpukit_cuda import cufft
    from pygpukit_cuda._loader import driver
    from pygpukit_cuda.device import context

    ctx, mod = context(0), driver()
    lib = cufft.library()
    if lib is None:
        raise SystemExit(cufft.status())
    cases = [  # (label, cufft type, n, batch, input shape/dtype, output shape/dtype)
        ("rfft 4096x1024", cufft.R2C, 1024, 4096, np.float32, np.complex64, 513),
        ("irfft 4096x513->1024", cufft.C2R, 1024, 4096, np.complex64, np.float32, 513),
        ("fft c64 4096x1024", cufft.C2C, 1024, 4096, np.complex64, np.complex64, 1024),
        ("rfft 3000x400", cufft.R2C, 400, 3000, np.float32, np.complex64, 201),
        ("rfft 60001x400 (stft)", cufft.R2C, 400, 60001, np.float32, np.complex64, 201),
    ]
    for case in cases:
        print(_row(*case, args.calls, lib, ctx, mod))


def _row(label: str, kind: int, n: int, batch: int, din: Any, dout: Any, half: int, calls: int,
         lib: Any, ctx: Any, mod: Any) -> str:  # fmt: skip
    import pygpukit as gp
    from pygpukit_cuda import cufft

    ilen = half if kind == cufft.C2R else n
    olen = half if kind == cufft.R2C else n
    host = np.random.default_rng(0).standard_normal((batch, ilen)).astype(din)
    x = gp.asarray(host, device="cuda:0")
    out = gp.empty((batch, olen), dtype=np.dtype(dout).name, device="cuda:0")
    xp, op = x.buffer.ptr + x.offset, out.buffer.ptr + out.offset
    direction = -1 if kind == cufft.C2C else 0
    row = [f"{label:<24}"]
    for name, inembed, onembed in (("basic", [], []), ("advanced", [ilen], [olen])):
        plan = lib.plan(ctx, kind, [n], inembed, 1, ilen, onembed, 1, olen, batch)
        work = gp.empty((max(int(plan.work_bytes), 1),), dtype="uint8", device="cuda:0")
        wp = work.buffer.ptr + work.offset
        us = _time_us(lambda: plan(0, xp, op, wp, direction), calls, ctx, mod)  # noqa: B023
        row.append(f"{name} {us:8.1f} us")
    try:
        import torch
    except ImportError:
        return "  ".join([*row, "torch not installed"])
    t = torch.from_numpy(host).cuda()
    fn = {cufft.R2C: lambda: torch.fft.rfft(t), cufft.C2C: lambda: torch.fft.fft(t),
          cufft.C2R: lambda: torch.fft.irfft(t, n=n)}[kind]  # fmt: skip
    for _ in range(3):
        fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(calls):
        fn()
    e.record()
    e.synchronize()
    row.append(f"torch {s.elapsed_time(e) * 1e3 / calls:8.1f} us")
    return "  ".join(row)


if __name__ == "__main__":
    main()
