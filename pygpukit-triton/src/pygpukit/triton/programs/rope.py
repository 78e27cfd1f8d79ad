"""Rotary position embedding in place, half-split (NeoX) pairing: one program per (batch,
position), all heads of that position at once; cos/sin rows read once per program."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def rope(x, cos, sin, S, H, HALF, sxb, sxs, sxh, sxd, scs, scd, sss, ssd, F64: tl.constexpr,
         BH: tl.constexpr, BD: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    b = (pid // S).to(tl.int64)
    s = (pid % S).to(tl.int64)
    ct = tl.float64 if F64 else tl.float32
    d = tl.arange(0, BD)
    dm = d < HALF
    c = tl.load(cos + s * scs + d * scd, mask=dm, other=0.0).to(ct)
    n = tl.load(sin + s * sss + d * ssd, mask=dm, other=0.0).to(ct)
    for h0 in range(0, H, BH):
        h = h0 + tl.arange(0, BH)
        m = (h < H)[:, None] & dm[None, :]
        base = x + b * sxb + s * sxs + h[:, None].to(tl.int64) * sxh
        p1 = base + d[None, :] * sxd
        p2 = base + (d[None, :] + HALF) * sxd
        x1 = tl.load(p1, mask=m, other=0.0).to(ct)
        x2 = tl.load(p2, mask=m, other=0.0).to(ct)
        tl.store(p1, (x1 * c[None, :] - x2 * n[None, :]).to(x.dtype.element_ty), mask=m)
        tl.store(p2, (x2 * c[None, :] + x1 * n[None, :]).to(x.dtype.element_ty), mask=m)
