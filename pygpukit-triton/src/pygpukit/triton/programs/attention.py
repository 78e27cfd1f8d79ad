"""Causal flash attention, forward, with grouped-query heads: one program per (batch x query
head, BM queries).

Key/value tiles stream through an online softmax (running max and sum in float32), so the
score matrix never reaches memory; tiles past the causal limit are never loaded; float32
data multiplies exactly (IEEE), not in TF32. The mask is aligned bottom-right: query i
sees keys j <= i + Skv - Sq.

Speed on Hopper comes from three things: the key loop is split so only the tiles on the
causal diagonal (or past the end of the keys) pay for mask arithmetic; scores carry the
softmax scale and log2(e) so one multiply-add feeds exp2; and programs are mapped to query
blocks (SCHED) so the work each SM ends up with is even:

- 0 heavy: a (heads, blocks) grid numbered from the last block, so the heaviest blocks
  (which see the most keys) start first and the short ones fill the tail of the grid;
- 1 pair: program p takes the p-th heaviest block and then the p-th lightest: half as
  many programs of equal work (one resident program per SM, all finishing together);
- 2 snake: a 1-D grid over blocks ranked by weight, every other wave of W programs (W:
  the SM count) reversed, so the two programs an SM holds at once (wave 0's r-th and wave
  1's r-th) are a heavy and a light block. Heavy-first on two resident programs per SM
  pairs SM r's heaviest block with the next-heaviest wave (16 heads x 2048 at 128-query
  blocks: 48 key tiles on the busiest SM against 34 on average);
- 3 zip: a 1-D grid alternating the heaviest and the lightest block left, for a GPU that
  fills one SM with consecutive programs.

LAZY (unmasked tiles only) keeps a stale running max until some row's grows by more than
8 in log2 units: the tile's probabilities then stay below 2^8 and the accumulator's
rescale (a multiply per element, plus the block-wide test) runs only on those tiles.

TMA reads K/V tiles through tensor descriptors (Hopper's bulk copies: no per-element
address math, fewer registers); each program writes its two descriptors into Triton's
global scratch (128 bytes each), which the launcher provides per stream.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _step(qt, kbase, vbase, n0, rm, rn, rd, rdv, kdm, vdm, m_i, l_i, acc, Skv, shift,
          qk_scale, sks, skd, svs, svd, MASK: tl.constexpr, IEEE: tl.constexpr,
          UPCAST: tl.constexpr, EVEN_D: tl.constexpr, SCALE_POS: tl.constexpr,
          LAZY: tl.constexpr, TMA: tl.constexpr):  # fmt: skip
    """One key/value tile of the online softmax (MASK: the tile crosses the causal edge or
    the end of the keys). With TMA, kbase and vbase are tensor descriptors of this head's
    keys and values (rows past the end read as zeros)."""
    cols = n0 + rn
    # offsets rebuilt from 1-D pieces each tile: a loop-invariant 2-D pointer tile would stay
    # live across the loop and cost ~30 registers per thread (measured on sm_90)
    if TMA:
        kt = kbase.load([n0, 0]).T
    elif MASK:
        kp = kbase + cols[None, :].to(tl.int64) * sks + rd[:, None] * skd
        if EVEN_D:
            kt = tl.load(kp, mask=(cols < Skv)[None, :], other=0.0)
        else:
            kt = tl.load(kp, mask=kdm & (cols < Skv)[None, :], other=0.0)
    elif EVEN_D:
        kt = tl.load(kbase + cols[None, :].to(tl.int64) * sks + rd[:, None] * skd)
    else:
        kp = kbase + cols[None, :].to(tl.int64) * sks + rd[:, None] * skd
        kt = tl.load(kp, mask=kdm, other=0.0)
    if UPCAST:  # Triton's interpreter multiplies bfloat16 tiles as raw bits: widen first
        kt = kt.to(tl.float32)
    if IEEE:  # float32 data: exact products, as NumPy computes them
        qk = tl.dot(qt, kt, input_precision="ieee")
    else:
        qk = tl.dot(qt, kt)
    if MASK:
        allowed = (cols[None, :] <= rm[:, None] + shift) & (cols < Skv)[None, :]
        s = tl.where(allowed, qk * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        # a row that has seen no key yet keeps max -inf: subtract 0 so it stays exp2(-inf)=0
        m_sub = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_sub[:, None])
    else:
        # every score is finite here, so the new max is too
        if SCALE_POS:  # max commutes with a positive scale: scale and subtract in one FMA
            m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        else:
            m_new = tl.maximum(m_i, tl.max(qk * qk_scale, 1))
        m_sub = m_new
        if not LAZY:
            p = tl.exp2(qk * qk_scale - m_sub[:, None])
    if MASK or not LAZY:
        alpha = tl.exp2(m_i - m_sub)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
    else:
        # keep the running max unless some row's grew by more than 8 (log2 units): p then
        # stays <= 2^8 (no overflow in fp32, none in the 16-bit product either) and most
        # tiles skip rescaling the accumulator, a multiply per element of it
        if tl.max(m_new - m_i, 0) > 8.0:
            alpha = tl.exp2(m_i - m_new)
            l_i = l_i * alpha
            acc = acc * alpha[:, None]
            m_i = m_new
        m_new = m_i
        p = tl.exp2(qk * qk_scale - m_i[:, None])
        l_i = l_i + tl.sum(p, 1)
    if TMA:
        vt = vbase.load([n0, 0])
    else:
        vp = vbase + cols[:, None].to(tl.int64) * svs + rdv[None, :] * svd
        if MASK:
            if EVEN_D:
                vt = tl.load(vp, mask=(cols < Skv)[:, None], other=0.0)
            else:
                vt = tl.load(vp, mask=vdm & (cols < Skv)[:, None], other=0.0)
        elif EVEN_D:
            vt = tl.load(vp)
        else:
            vt = tl.load(vp, mask=vdm, other=0.0)
    if UPCAST:
        vt = vt.to(tl.float32)
    if IEEE:
        acc = tl.dot(p, vt, acc, input_precision="ieee")
    else:
        acc = tl.dot(p.to(vt.dtype), vt, acc)  # accumulates in place: no second register tile
    return m_new, l_i, acc


@triton.jit
def _block(q, k, v, out, b, h, hk, start, Sq, Skv, D, DV, qk_scale,
           sqs, sqd, skh, sks, skd, svh, svs, svd, sos, sod, sqb, sqh, skb, svb, sob, soh,
           BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr, BDV: tl.constexpr,
           IEEE: tl.constexpr, UPCAST: tl.constexpr, EVEN_D: tl.constexpr,
           SCALE_POS: tl.constexpr, LAZY: tl.constexpr, TMA: tl.constexpr):  # fmt: skip
    """Queries [start, start + BM) of one head: load Q, stream K/V, write the output rows."""
    rm = start + tl.arange(0, BM)
    rd = tl.arange(0, BD)
    rdv = tl.arange(0, BDV)
    rn = tl.arange(0, BN)
    qp = q + b * sqb + h * sqh + rm[:, None].to(tl.int64) * sqs + rd[None, :] * sqd
    if EVEN_D:
        qt = tl.load(qp, mask=(rm < Sq)[:, None], other=0.0)
    else:
        qt = tl.load(qp, mask=(rm < Sq)[:, None] & (rd < D)[None, :], other=0.0)
    if UPCAST:
        qt = qt.to(tl.float32)
    # K is read as its transpose (BD x BN) so the first product is a plain Q @ K^T tile
    kbase = k + b * skb + hk * skh
    vbase = v + b * svb + hk * svh
    if TMA:  # the host checked: unit head-dim strides, 16-byte aligned rows and bases
        kbase = tl.make_tensor_descriptor(kbase, shape=[Skv, BD], strides=[sks, 1],
                                          block_shape=[BN, BD])  # fmt: skip
        vbase = tl.make_tensor_descriptor(vbase, shape=[Skv, BDV], strides=[svs, 1],
                                          block_shape=[BN, BDV])  # fmt: skip
    kdm = (rd < D)[:, None]
    vdm = (rdv < DV)[None, :]
    shift = Skv - Sq
    m_i = tl.zeros([BM], tl.float32) - float("inf")
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, BDV], tl.float32)
    # keys [0, full) are seen by every query of the block; [full, end) need the mask
    end = tl.minimum(start + BM + shift, Skv)
    full = tl.maximum(tl.minimum((start + shift + 1) // BN * BN, end), 0)
    for n0 in range(0, full, BN):
        m_i, l_i, acc = _step(qt, kbase, vbase, n0, rm, rn, rd, rdv, kdm, vdm, m_i, l_i, acc,
                              Skv, shift, qk_scale, sks, skd, svs, svd, False, IEEE, UPCAST,
                              EVEN_D, SCALE_POS, LAZY, TMA)  # fmt: skip
    for n0 in range(full, end, BN):
        m_i, l_i, acc = _step(qt, kbase, vbase, n0, rm, rn, rd, rdv, kdm, vdm, m_i, l_i, acc,
                              Skv, shift, qk_scale, sks, skd, svs, svd, True, IEEE, UPCAST,
                              EVEN_D, SCALE_POS, LAZY, TMA)  # fmt: skip
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    o = acc / l_safe[:, None]
    om = (rm < Sq)[:, None] & (rdv < DV)[None, :]
    tl.store(out + b * sob + h * soh + rm[:, None].to(tl.int64) * sos + rdv[None, :] * sod,
             o.to(out.dtype.element_ty), mask=om)  # fmt: skip


@triton.jit
def flash_causal(q, k, v, out, H, G, Sq, Skv, D, DV, W, scale,
                 sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd,
                 sob, soh, sos, sod, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
                 BDV: tl.constexpr, IEEE: tl.constexpr, UPCAST: tl.constexpr,
                 EVEN_D: tl.constexpr, SCALE_POS: tl.constexpr, SCHED: tl.constexpr,
                 LAZY: tl.constexpr, TMA: tl.constexpr):  # fmt: skip
    qk_scale = scale * 1.4426950408889634  # log2(e): exp2 is the cheap instruction
    last = (Sq + BM - 1) // BM - 1
    blocks = 1
    if SCHED <= 1:  # heavy, pair: (batch x heads, query blocks)
        bh = tl.program_id(0)
        # the last query blocks see the most keys: number blocks from the end so they start
        # first
        heavy = last - tl.program_id(1)
        light = tl.program_id(1)
        if SCHED == 1:
            # program p also takes block p, the p-th lightest: every program then reads
            # about the same number of key tiles, so a grid that fits the GPU in one wave
            # ends evenly (a loop, not a second inlined copy: two copies cost ~50 registers)
            blocks = 1 + (light < heavy).to(tl.int32)
    else:  # snake, zip: one axis over every (head, block), ranked heaviest first
        pid = tl.program_id(0)
        nbh = tl.num_programs(0) // (last + 1)
        total = tl.num_programs(0)
        if SCHED == 2:
            # odd waves of W run backwards: SM r's second resident program is the r-th
            # lightest of the next 2W ranks, not the (W + r)-th heaviest
            base = pid // W * W
            odd = (pid // W) % 2
            rank = tl.where(odd == 1, base + tl.minimum(W, total - base) - 1 - pid % W, pid)
        else:
            rank = tl.where(pid % 2 == 0, pid // 2, total - 1 - pid // 2)
        bh = rank % nbh
        heavy = last - rank // nbh
        light = heavy
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    hk = h // G
    for j in range(0, blocks):
        start = (heavy - j * (heavy - light)) * BM
        _block(q, k, v, out, b, h, hk, start, Sq, Skv, D, DV, qk_scale, sqs, sqd, skh, sks,
               skd, svh, svs, svd, sos, sod, sqb, sqh, skb, svb, sob, soh, BM, BN, BD, BDV,
               IEEE, UPCAST, EVEN_D, SCALE_POS, LAZY, TMA)  # fmt: skip
