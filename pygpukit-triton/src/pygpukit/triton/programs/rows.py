"""Row programs: softmax, log_softmax, layernorm and rmsnorm over one axis of strided rows.

Rows are addressed by up to three outer indices (i0, i1, i2) with their strides, so any
layout whose other axes merge into three is read in place. `rows_tile` keeps ROWS whole
rows in registers (one read of x); `rows_loop` streams longer rows in BLOCK chunks.
Math is float32 (float64 for float64 data). OP: 0 softmax, 1 log_softmax, 2 layernorm,
3 rmsnorm.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _row_base(rows, R1, R2, s0, s1, s2):
    i0 = rows // (R1 * R2)
    i1 = (rows // R2) % R1
    i2 = rows % R2
    return i0.to(tl.int64) * s0 + i1.to(tl.int64) * s1 + i2.to(tl.int64) * s2


@triton.jit
def rows_tile(x, out, gamma, beta, nrows, n, R1, R2, xs0, xs1, xs2, xsc, os0, os1, os2, osc,
              eps, OP: tl.constexpr, F64: tl.constexpr, ROWS: tl.constexpr,
              BLOCK: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows < nrows)[:, None] & (cols < n)[None, :]
    xb = _row_base(rows, R1, R2, xs0, xs1, xs2)
    ob = _row_base(rows, R1, R2, os0, os1, os2)
    ct = tl.float64 if F64 else tl.float32
    c64 = cols.to(tl.int64)
    fill = float("-inf") if OP < 2 else 0.0
    v = tl.load(x + xb[:, None] + c64[None, :] * xsc, mask=mask, other=fill).to(ct)
    if OP < 2:
        m = tl.max(v, 1)
        m = tl.where(m == float("-inf"), 0.0, m)  # all -inf rows (and padding) stay finite
        e = tl.exp(v - m[:, None])
        s = tl.sum(e, 1)
        if OP == 0:
            y = e / s[:, None]
        else:
            y = v - m[:, None] - tl.log(s)[:, None]
    elif OP == 2:
        mean = tl.sum(v, 1) / n
        d = tl.where(mask, v - mean[:, None], 0.0)
        var = tl.sum(d * d, 1) / n
        g = tl.load(gamma + cols, mask=cols < n, other=0.0).to(ct)
        b = tl.load(beta + cols, mask=cols < n, other=0.0).to(ct)
        y = d * (1.0 / tl.sqrt(var + eps))[:, None] * g[None, :] + b[None, :]
    else:
        ms = tl.sum(v * v, 1) / n
        g = tl.load(gamma + cols, mask=cols < n, other=0.0).to(ct)
        y = v * (1.0 / tl.sqrt(ms + eps))[:, None] * g[None, :]
    tl.store(out + ob[:, None] + c64[None, :] * osc, y.to(out.dtype.element_ty), mask=mask)


@triton.jit
def rows_loop(x, out, gamma, beta, nrows, n, R1, R2, xs0, xs1, xs2, xsc, os0, os1, os2, osc,
              eps, OP: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    row = tl.program_id(0)
    xb = _row_base(row, R1, R2, xs0, xs1, xs2)
    ob = _row_base(row, R1, R2, os0, os1, os2)
    ct = tl.float64 if F64 else tl.float32
    cols = tl.arange(0, BLOCK).to(tl.int64)
    fill = float("-inf") if OP < 2 else 0.0
    # pass 1: running max and sum of exp (softmax), or sum and sum of squares (norms)
    a = tl.zeros([BLOCK], ct) + fill
    b = tl.zeros([BLOCK], ct)
    for start in range(0, n, BLOCK):
        c = start + cols
        v = tl.load(x + xb + c * xsc, mask=c < n, other=fill).to(ct)
        if OP < 2:
            new = tl.maximum(a, v)
            safe = tl.where(new == float("-inf"), 0.0, new)
            b = b * tl.exp(a - safe) + tl.exp(v - safe)
            a = new
        elif OP == 2:
            a += v
        else:
            b += v * v
    if OP < 2:
        m = tl.max(a, 0)
        m = tl.where(m == float("-inf"), 0.0, m)
        s = tl.sum(b * tl.exp(tl.where(a == float("-inf"), m, a) - m), 0)
    elif OP == 2:
        mean = tl.sum(a, 0) / n
        for start in range(0, n, BLOCK):  # the variance from the mean: no cancellation
            c = start + cols
            v = tl.load(x + xb + c * xsc, mask=c < n, other=0.0).to(ct)
            d = tl.where(c < n, v - mean, 0.0)
            b += d * d
        rstd = 1.0 / tl.sqrt(tl.sum(b, 0) / n + eps)
    else:
        rstd = 1.0 / tl.sqrt(tl.sum(b, 0) / n + eps)
    # pass 2: write
    for start in range(0, n, BLOCK):
        c = start + cols
        cm = c < n
        v = tl.load(x + xb + c * xsc, mask=cm, other=0.0).to(ct)
        if OP == 0:
            y = tl.exp(v - m) / s
        elif OP == 1:
            y = v - m - tl.log(s)
        elif OP == 2:
            g = tl.load(gamma + c, mask=cm, other=0.0).to(ct)
            bb = tl.load(beta + c, mask=cm, other=0.0).to(ct)
            y = (v - mean) * rstd * g + bb
        else:
            g = tl.load(gamma + c, mask=cm, other=0.0).to(ct)
            y = v * rstd * g
        tl.store(out + ob + c * osc, y.to(out.dtype.element_ty), mask=cm)
