"""Causal flash attention, forward, with grouped-query heads: one program per (BM queries,
batch x query head).

Key/value tiles stream through an online softmax (running max and sum in float32), so the
score matrix never reaches memory; tiles past the causal limit are never loaded; float32
data multiplies exactly (IEEE), not in TF32. The mask is aligned bottom-right: query i
sees keys j <= i + Skv - Sq.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def flash_causal(q, k, v, out, H, G, Sq, Skv, D, DV, scale,
                 sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd,
                 sob, soh, sos, sod, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
                 BDV: tl.constexpr, IEEE: tl.constexpr,
                 UPCAST: tl.constexpr):  # fmt: skip
    start = tl.program_id(0) * BM
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    hk = h // G
    ct = tl.float32
    rm = start + tl.arange(0, BM)
    rd = tl.arange(0, BD)
    rdv = tl.arange(0, BDV)
    rn = tl.arange(0, BN)
    qm = (rm < Sq)[:, None] & (rd < D)[None, :]
    qt = tl.load(q + b * sqb + h * sqh + rm[:, None].to(tl.int64) * sqs + rd[None, :] * sqd,
                 mask=qm, other=0.0)  # fmt: skip
    if UPCAST:  # Triton's interpreter multiplies bfloat16 tiles as raw bits: widen first
        qt = qt.to(tl.float32)
    kbase = k + b * skb + hk * skh
    vbase = v + b * svb + hk * svh
    shift = Skv - Sq
    m_i = tl.zeros([BM], ct) - float("inf")
    l_i = tl.zeros([BM], ct)
    acc = tl.zeros([BM, BDV], ct)
    # the last key any query of this block sees
    end = tl.minimum(start + BM + shift, Skv)
    for n0 in range(0, end, BN):
        cols = n0 + rn
        kt = tl.load(kbase + cols[None, :].to(tl.int64) * sks + rd[:, None] * skd,
                     mask=(cols < Skv)[None, :] & (rd < D)[:, None], other=0.0)  # fmt: skip
        if UPCAST:
            kt = kt.to(tl.float32)
        if IEEE:  # float32 data: exact products, as NumPy computes them
            s = tl.dot(qt, kt, input_precision="ieee") * scale
        else:
            s = tl.dot(qt, kt) * scale
        allowed = (cols[None, :] <= rm[:, None] + shift) & (cols < Skv)[None, :]
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        vt = tl.load(vbase + cols[:, None].to(tl.int64) * svs + rdv[None, :] * svd,
                     mask=(cols < Skv)[:, None] & (rdv < DV)[None, :], other=0.0)  # fmt: skip
        if UPCAST:
            vt = vt.to(tl.float32)
        if IEEE:
            acc = acc * alpha[:, None] + tl.dot(p, vt, input_precision="ieee")
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(vt.dtype), vt)
        m_i = m_new
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    o = acc / l_safe[:, None]
    om = (rm < Sq)[:, None] & (rdv < DV)[None, :]
    tl.store(out + b * sob + h * soh + rm[:, None].to(tl.int64) * sos + rdv[None, :] * sod,
             o.to(out.dtype.element_ty), mask=om)  # fmt: skip
