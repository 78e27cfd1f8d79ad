"""Tiled matrix product on tensor cores: one (BM, BN) tile of one batch item per program,
grouped along M so neighbouring programs reuse tiles of x2 in L2. Float32 accumulation
(TF32 for float32 only when ALLOW_TF32), any strides, batch stride 0 broadcasts."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def matmul(a, b, c, M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn,
           ALLOW_TF32: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
           GROUP: tl.constexpr, UPCAST: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    first_m = (pid // per_group) * GROUP
    rows_in_group = min(tiles_m - first_m, GROUP)
    pm = first_m + (pid % per_group) % rows_in_group
    pn = (pid % per_group) // rows_in_group
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptr = a + batch * sab + rm[:, None].to(tl.int64) * sam + rk[None, :] * sak
    b_ptr = b + batch * sbb + rk[:, None] * sbk + rn[None, :].to(tl.int64) * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = (k0 + rk) < K
        x = tl.load(a_ptr, mask=(rm[:, None] < M) & ka[None, :], other=0.0)
        y = tl.load(b_ptr, mask=ka[:, None] & (rn[None, :] < N), other=0.0)
        if UPCAST:  # Triton's interpreter multiplies bfloat16 tiles as raw bits: widen first
            x = x.to(tl.float32)
            y = y.to(tl.float32)
        if ALLOW_TF32:
            acc = tl.dot(x, y, acc, input_precision="tf32")
        else:
            acc = tl.dot(x, y, acc, input_precision="ieee")
        a_ptr += BK * sak
        b_ptr += BK * sbk
    c_ptr = c + batch * scb + rm[:, None].to(tl.int64) * scm + rn[None, :] * scn
    tl.store(c_ptr, acc.to(c.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))
