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
def _step(qt, kbase, vbase, n0, rm, rd, rdv, rn, m_i, l_i, acc, Skv, D, DV, shift, qk_scale,
          sks, skd, svs, svd, MASK: tl.constexpr, IEEE: tl.constexpr,
          UPCAST: tl.constexpr):  # fmt: skip
    """One key/value tile of the online softmax (MASK: the tile crosses the causal edge or
    the end of the keys; tiles wholly visible skip the mask arithmetic)."""
    cols = n0 + rn
    kmask = (rd < D)[:, None]
    vmask = (rdv < DV)[None, :]
    if MASK:
        kmask = kmask & (cols < Skv)[None, :]
        vmask = vmask & (cols < Skv)[:, None]
    kt = tl.load(kbase + cols[None, :].to(tl.int64) * sks + rd[:, None] * skd, mask=kmask,
                 other=0.0)  # fmt: skip
    if UPCAST:  # Triton's interpreter multiplies bfloat16 tiles as raw bits: widen first
        kt = kt.to(tl.float32)
    if IEEE:  # float32 data: exact products, as NumPy computes them
        s = tl.dot(qt, kt, input_precision="ieee") * qk_scale
    else:
        s = tl.dot(qt, kt) * qk_scale
    if MASK:
        allowed = (cols[None, :] <= rm[:, None] + shift) & (cols < Skv)[None, :]
        s = tl.where(allowed, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    p = tl.exp2(s - m_safe[:, None])  # scores carry log2(e): exp2 is the cheap instruction
    alpha = tl.exp2(m_i - m_safe)
    l_i = l_i * alpha + tl.sum(p, 1)
    vt = tl.load(vbase + cols[:, None].to(tl.int64) * svs + rdv[None, :] * svd, mask=vmask,
                 other=0.0)  # fmt: skip
    if UPCAST:
        vt = vt.to(tl.float32)
    if IEEE:
        acc = acc * alpha[:, None] + tl.dot(p, vt, input_precision="ieee")
    else:
        acc = acc * alpha[:, None] + tl.dot(p.to(vt.dtype), vt)
    return m_new, l_i, acc


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
    rm = start + tl.arange(0, BM)
    rd = tl.arange(0, BD)
    rdv = tl.arange(0, BDV)
    rn = tl.arange(0, BN)
    qm = (rm < Sq)[:, None] & (rd < D)[None, :]
    qt = tl.load(q + b * sqb + h * sqh + rm[:, None].to(tl.int64) * sqs + rd[None, :] * sqd,
                 mask=qm, other=0.0)  # fmt: skip
    if UPCAST:
        qt = qt.to(tl.float32)
    kbase = k + b * skb + hk * skh
    vbase = v + b * svb + hk * svh
    shift = Skv - Sq
    qk_scale = scale * 1.4426950408889634  # log2(e)
    m_i = tl.zeros([BM], tl.float32) - float("inf")
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, BDV], tl.float32)
    # keys [0, full) are seen by every query of the block; [full, end) need the mask
    end = tl.minimum(start + BM + shift, Skv)
    full = tl.maximum(tl.minimum((start + shift + 1) // BN * BN, end), 0)
    for n0 in range(0, full, BN):
        m_i, l_i, acc = _step(
            qt,
            kbase,
            vbase,
            n0,
            rm,
            rd,
            rdv,
            rn,
            m_i,
            l_i,
            acc,
            Skv,
            D,
            DV,
            shift,
            qk_scale,
            sks,
            skd,
            svs,
            svd,
            False,
            IEEE,
            UPCAST,
        )
    for n0 in range(full, end, BN):
        m_i, l_i, acc = _step(
            qt,
            kbase,
            vbase,
            n0,
            rm,
            rd,
            rdv,
            rn,
            m_i,
            l_i,
            acc,
            Skv,
            D,
            DV,
            shift,
            qk_scale,
            sks,
            skd,
            svs,
            svd,
            True,
            IEEE,
            UPCAST,
        )
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    o = acc / l_safe[:, None]
    om = (rm < Sq)[:, None] & (rdv < DV)[None, :]
    tl.store(out + b * sob + h * soh + rm[:, None].to(tl.int64) * sos + rdv[None, :] * sod,
             o.to(out.dtype.element_ty), mask=om)  # fmt: skip
