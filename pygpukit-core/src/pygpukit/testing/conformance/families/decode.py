"""Conformance specs of the decode-step ops: embedding, rope_at_inplace, kv_cache_write(_pair),
rope_kv_cache_write, decode_advance, sdpa_causal_cache, gather_matmul, silu_mul, add_rmsnorm,
linear_rows.

References are float64 and written row by row from the conventions in `_ops/decode.py`,
not from the kernels. Index arrays (ids, positions, slots, starts, ends) are fresh random
valid values, int32 in some cases and int64 in others. The in-place ops update views of
larger arrays and the whole parents are compared, so writes outside the views are caught;
cache slots outside the attended range hold random data that must stay unseen.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import pygpukit as gp

from .... import _dtypes as dt
from ...._array import GPUArray
from ...._device import Device
from ...._dtypes import DataType
from ..catalog import Case, OpSpec
from ._common import draw, f64

FLOATS = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
#: a wider float to pair with each dtype in mixed-dtype cases
WIDER = {dt.float16: dt.float32, dt.bfloat16: dt.float32, dt.float32: dt.float64}
Fn = Callable[..., Any]


def _np(d: DataType) -> Any:
    return d.to_numpy_dtype()


def _index(values: Any, d: DataType, device: Device) -> GPUArray:
    return GPUArray.from_numpy(np.asarray(values).astype(_np(d)), device)


def _up(host: np.ndarray, device: Device) -> GPUArray:
    return GPUArray.from_numpy(host, device)


# -- embedding -----------------------------------------------------------------------
def _embedding_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, vocab, hidden, ids_shape, index, column_view in (
        ("token ids (B,)", 11, 8, (4,), dt.int32, False),
        ("ids (B, S) with repeats", 3, 5, (2, 6), dt.int64, False),
        ("one 0-d id", 7, 6, (), dt.int32, False),
        ("weight a column view", 9, 4, (5,), dt.int64, True),
        ("no ids", 5, 4, (0,), dt.int32, False),
    ):  # fmt: skip
        parent = draw(rng, (vocab, 2 * hidden if column_view else hidden), d, (-3.0, 3.0))
        ids = rng.integers(0, vocab, size=ids_shape)
        gparent = _up(parent, device)
        gw = gparent[:, 1::2] if column_view else gparent
        weight = parent[:, 1::2] if column_view else parent
        expected = np.zeros((*ids_shape, hidden), dtype=_np(d))
        for pos in np.ndindex(*ids_shape):
            expected[pos] = weight[int(ids[pos])]
        gi = _index(ids, index, device)

        def run(name: str, gw: GPUArray = gw, gi: GPUArray = gi) -> Any:
            return gp.embedding(gw, gi, backend=name)

        def direct(kernel: Fn, out: GPUArray, gw: GPUArray = gw, gi: GPUArray = gi) -> None:
            if out.size:
                kernel(gw, gi, out)

        result.append(Case(label, run, expected, d, direct, needs=(index,)))
    return result


# -- rope at positions ---------------------------------------------------------------
def _rotate(x: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """One head vector x (D,) rotated by cos/sin rows (D/2,): halves (a, b) -> (a c - b s,
    b c + a s)."""
    half = x.shape[0] // 2
    a, b = x[:half], x[half:]
    return np.concatenate([a * c - b * s, b * c + a * s])


def _rope_at_ref(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, pos: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for b, s, h in np.ndindex(*x.shape[:3]):
        p = int(pos[b, s])
        out[b, s, h] = _rotate(x[b, s, h], cos[p], sin[p])
    return out


def _rope_at_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, batch, seq, hq, hk, dim, table_len, table, index in (
        ("decode step, one position per row", 3, 1, 4, 2, 8, 20, d, dt.int32),
        ("prefill with repeated positions", 2, 4, 2, 1, 6, 5, d, dt.int64),
        ("wider tables", 1, 3, 3, 3, 4, 9, WIDER.get(d), dt.int32),
    ):  # fmt: skip
        if table is None:  # float64 has no wider partner
            continue
        # q takes every other head of a wider parent, k drops a column on each side
        qp = draw(rng, (batch, seq, 2 * hq, dim), d, (-3.0, 3.0))
        kp = draw(rng, (batch, seq, hk, dim + 2), d, (-3.0, 3.0))
        angles = rng.uniform(-math.pi, math.pi, size=(table_len, dim // 2))
        cos_h, sin_h = np.cos(angles).astype(_np(table)), np.sin(angles).astype(_np(table))
        pos = rng.integers(0, table_len, size=(batch, seq))
        want_q, want_k = f64(qp), f64(kp)
        want_q[:, :, ::2] = _rope_at_ref(want_q[:, :, ::2], f64(cos_h), f64(sin_h), pos)
        want_k[..., 1 : dim + 1] = _rope_at_ref(want_k[..., 1 : dim + 1], f64(cos_h),
                                                f64(sin_h), pos)  # fmt: skip

        def run(name: str, qp: np.ndarray = qp, kp: np.ndarray = kp, cos_h: Any = cos_h,
                sin_h: Any = sin_h, pos: Any = pos, index: DataType = index,
                dim: int = dim) -> Any:  # fmt: skip
            gq, gk = _up(qp, device), _up(kp, device)
            gp.rope_at_inplace(gq[:, :, ::2], gk[..., 1 : dim + 1], _up(cos_h, device),
                               _up(sin_h, device), _index(pos, index, device),
                               backend=name)  # fmt: skip
            return gq, gk

        needs = (index,) if table is d else (index, table)
        result.append(Case(label, run, (want_q, want_k), d, parts=(d, d), needs=needs))
    return result


# -- KV-cache writes -----------------------------------------------------------------
def _kv_ref(cache: np.ndarray, new: np.ndarray, slots: np.ndarray, d: DataType) -> np.ndarray:
    """cache with new[b, h, s] written at slot slots[b] + s, rounded to the cache's dtype."""
    out = cache.copy()
    for b, h, s in np.ndindex(*new.shape[:3]):
        out[b, h, int(slots[b]) + s] = new[b, h, s].astype(_np(d))
    return out


#: label, (B, H, L, D), new positions S, dtype of new (None: the cache's), index dtype
KV_CASES: tuple[tuple[str, tuple[int, int, int, int], int, Any, DataType], ...] = (
    ("decode step", (3, 2, 8, 4), 1, None, dt.int32),
    ("prefill block, slots up to the end", (2, 3, 6, 5), 3, None, dt.int64),
    ("wider new values", (2, 1, 5, 4), 2, "wider", dt.int32),
)


KvDraw = tuple[np.ndarray, np.ndarray, np.ndarray, DataType]


def _kv_draw(rng: np.random.Generator, d: DataType, shape: tuple[int, int, int, int],
             seq: int, new_kind: Any) -> KvDraw:  # fmt: skip
    """A cache parent with one spare head (the cache is every head but the first), the new
    block as a (B, S, H, D) array to be viewed transposed, and slots that fit."""
    b, h, length, dim = shape
    nd = WIDER[d] if new_kind == "wider" else d
    parent = draw(rng, (b, h + 1, length, dim), d, (-3.0, 3.0))
    new_bshd = draw(rng, (b, seq, h, dim), nd, (-3.0, 3.0))
    slots = rng.integers(0, length - seq + 1, size=(b,))
    slots[-1] = length - seq  # the last row writes through the cache's end
    return parent, new_bshd, slots, nd


def _kv_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, shape, seq, new_kind, index in KV_CASES:
        if new_kind == "wider" and d not in WIDER:
            continue
        parent, new_bshd, slots, nd = _kv_draw(rng, d, shape, seq, new_kind)
        want = f64(parent)
        new = np.transpose(new_bshd, (0, 2, 1, 3))
        want[:, 1:] = f64(_kv_ref(parent[:, 1:], new, slots, d))

        def run(name: str, parent: np.ndarray = parent, new_bshd: np.ndarray = new_bshd,
                slots: Any = slots, index: DataType = index) -> Any:  # fmt: skip
            g = _up(parent, device)
            gnew = _up(new_bshd, device).transpose((0, 2, 1, 3))
            gp.kv_cache_write(g[:, 1:], gnew, _index(slots, index, device), backend=name)
            return g

        needs = (index,) if nd is d else (index, nd)
        kind = "exact" if nd is d else "elementwise"
        result.append(Case(label, run, want, d, needs=needs, op_kind=kind))
    return result


def _kv_pair_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, shape, seq, new_kind, index in KV_CASES:
        if new_kind == "wider" and d not in WIDER:
            continue
        kparent, knew, slots, nd = _kv_draw(rng, d, shape, seq, new_kind)
        vparent, vnew, _, _ = _kv_draw(rng, d, shape, seq, new_kind)
        expected = []
        for parent, new_bshd in ((kparent, knew), (vparent, vnew)):
            want = f64(parent)
            new = np.transpose(new_bshd, (0, 2, 1, 3))
            want[:, 1:] = f64(_kv_ref(parent[:, 1:], new, slots, d))
            expected.append(want)

        def run(name: str, kparent: np.ndarray = kparent, vparent: np.ndarray = vparent,
                knew: np.ndarray = knew, vnew: np.ndarray = vnew, slots: Any = slots,
                index: DataType = index) -> Any:  # fmt: skip
            gk, gv = _up(kparent, device), _up(vparent, device)
            gkn = _up(knew, device).transpose((0, 2, 1, 3))
            gvn = _up(vnew, device).transpose((0, 2, 1, 3))
            gp.kv_cache_write_pair(gk[:, 1:], gv[:, 1:], gkn, gvn,
                                   _index(slots, index, device), backend=name)  # fmt: skip
            return gk, gv

        needs = (index,) if nd is d else (index, nd)
        kind = "exact" if nd is d else "elementwise"
        result.append(Case(label, run, tuple(expected), d, parts=(d, d), needs=needs,
                           op_kind=kind))  # fmt: skip
    return result


# -- RoPE and the cache write in one pass ---------------------------------------------
def _rope_kv_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, batch, seq, hq, hk, dim, length, table, index in (
        ("decode step", 3, 1, 4, 2, 8, 10, d, dt.int32),
        ("prefill block up to the cache's end", 2, 3, 2, 1, 6, 5, d, dt.int64),
        ("wider tables", 2, 2, 3, 3, 4, 6, WIDER.get(d), dt.int32),
    ):  # fmt: skip
        if table is None:  # float64 has no wider partner
            continue
        # q, k and v are column views of one projection row; the caches skip a parent head
        proj = draw(rng, (batch, seq, (hq + 2 * hk) * dim), d, (-3.0, 3.0))
        qh = proj[..., : hq * dim].reshape(batch, seq, hq, dim)
        kh = proj[..., hq * dim : (hq + hk) * dim].reshape(batch, seq, hk, dim)
        vh = proj[..., (hq + hk) * dim :].reshape(batch, seq, hk, dim)
        kpar = draw(rng, (batch, hk + 1, length, dim), d, (-3.0, 3.0))
        vpar = draw(rng, (batch, hk + 1, length, dim), d, (-3.0, 3.0))
        angles = rng.uniform(-math.pi, math.pi, size=(length + 2, dim // 2))
        cos_h, sin_h = np.cos(angles).astype(_np(table)), np.sin(angles).astype(_np(table))
        slots = rng.integers(0, length - seq + 1, size=(batch,))
        slots[-1] = length - seq
        pos = slots[:, None] + np.arange(seq)[None, :] + rng.integers(0, 3, size=(batch, 1))
        want_q = _rope_at_ref(f64(qh), f64(cos_h), f64(sin_h), pos)
        want_k = _rope_at_ref(f64(kh), f64(cos_h), f64(sin_h), pos)
        want_proj = f64(proj)  # the whole row: v must come through untouched
        want_proj[..., : hq * dim] = want_q.reshape(batch, seq, -1)
        want_proj[..., hq * dim : (hq + hk) * dim] = want_k.reshape(batch, seq, -1)
        want_keys, want_values = f64(kpar), f64(vpar)
        for b, s in np.ndindex(batch, seq):
            want_keys[b, 1:, int(slots[b]) + s] = want_k[b, s]
            want_values[b, 1:, int(slots[b]) + s] = f64(vh)[b, s]

        def run(name: str, proj: np.ndarray = proj, kpar: np.ndarray = kpar,
                vpar: np.ndarray = vpar, cos_h: Any = cos_h, sin_h: Any = sin_h,
                pos: Any = pos, slots: Any = slots, index: DataType = index, hq: int = hq,
                hk: int = hk, dim: int = dim) -> Any:  # fmt: skip
            g = _up(proj, device)
            b_, s_ = proj.shape[:2]
            gq = g[..., : hq * dim].reshape((b_, s_, hq, dim))
            gk = g[..., hq * dim : (hq + hk) * dim].reshape((b_, s_, hk, dim))
            gv = g[..., (hq + hk) * dim :].reshape((b_, s_, hk, dim))
            gkp, gvp = _up(kpar, device), _up(vpar, device)
            gp.rope_kv_cache_write(gq, gk, gv, _up(cos_h, device), _up(sin_h, device),
                                   _index(pos, index, device), gkp[:, 1:], gvp[:, 1:],
                                   _index(slots, index, device), backend=name)  # fmt: skip
            return g, gkp, gvp

        needs = (index,) if table is d else (index, table)
        result.append(Case(label, run, (want_proj, want_keys, want_values), d,
                           parts=(d, d, d), needs=needs))  # fmt: skip
    return result


def _rope_attention_cases(rng: np.random.Generator, d: DataType,
                          device: Device) -> list[Case]:  # fmt: skip
    result = []
    for label, batch, seq, hq, hk, dim, length, window, table, index in (
        ("decode step, GQA", 2, 1, 4, 2, 8, 10, 0, d, dt.int32),
        ("two new tokens, a window", 2, 2, 2, 1, 8, 9, 3, d, dt.int64),
        ("wider tables", 1, 1, 3, 3, 4, 6, 0, WIDER.get(d), dt.int32),
        # head dims the sm_90 short-context kernel takes (16-bit dtypes there)
        ("head_dim 64, GQA 4", 1, 1, 8, 2, 64, 40, 0, d, dt.int32),
        ("head_dim 128, two new tokens, a window", 2, 2, 8, 2, 128, 33, 9, d, dt.int64),
    ):  # fmt: skip
        if table is None:
            continue
        proj = draw(rng, (batch, seq, (hq + 2 * hk) * dim), d, (-2.0, 2.0))
        kpar = draw(rng, (batch, hk + 1, length, dim), d, (-2.0, 2.0))
        vpar = draw(rng, (batch, hk + 1, length, dim), d, (-2.0, 2.0))
        angles = rng.uniform(-math.pi, math.pi, size=(length + 2, dim // 2))
        cos_h, sin_h = np.cos(angles).astype(_np(table)), np.sin(angles).astype(_np(table))
        slots = rng.integers(0, length - seq + 1, size=(batch,))
        pos = slots[:, None] + np.arange(seq)[None, :]
        starts = np.array([int(rng.integers(0, s_ + 1)) for s_ in slots])
        ends = slots + seq
        parts = proj.reshape(batch, seq, hq + 2 * hk, dim)
        want_q = _rope_at_ref(f64(parts[:, :, :hq]), f64(cos_h), f64(sin_h), pos)
        want_k = _rope_at_ref(f64(parts[:, :, hq : hq + hk]), f64(cos_h), f64(sin_h), pos)
        want_proj = f64(proj)
        want_proj[..., : (hq + hk) * dim] = np.concatenate(
            [want_q, want_k], axis=2).reshape(batch, seq, -1)  # fmt: skip
        want_keys, want_values = f64(kpar), f64(vpar)
        for b, s in np.ndindex(batch, seq):
            want_keys[b, 1:, int(slots[b]) + s] = want_k[b, s]
            want_values[b, 1:, int(slots[b]) + s] = f64(parts[b, s, hq + hk :])
        out = _sdpa_cache_ref(want_q.transpose(0, 2, 1, 3), want_keys[:, 1:], want_values[:, 1:],
                              starts, ends, 1.0 / math.sqrt(dim), window)  # fmt: skip

        def fresh(proj: np.ndarray = proj, kpar: np.ndarray = kpar, vpar: np.ndarray = vpar,
                  cos_h: Any = cos_h, sin_h: Any = sin_h, pos: Any = pos, slots: Any = slots,
                  starts: Any = starts, ends: Any = ends, index: DataType = index, hq: int = hq,
                  hk: int = hk, dim: int = dim) -> tuple[Any, ...]:  # fmt: skip
            """New device copies: the op rotates q and k and writes the caches in place."""
            g = _up(proj, device)
            b_, s_ = proj.shape[:2]
            heads = g.reshape((b_, s_, hq + 2 * hk, dim))
            gkp, gvp = _up(kpar, device), _up(vpar, device)
            args = (heads[:, :, :hq], heads[:, :, hq : hq + hk], heads[:, :, hq + hk :],
                    _up(cos_h, device), _up(sin_h, device), _index(pos, index, device),
                    gkp[:, 1:], gvp[:, 1:], _index(slots, index, device),
                    _index(starts, index, device), _index(ends, index, device))  # fmt: skip
            return g, gkp, gvp, args

        def run(name: str, fresh: Fn = fresh, window: int = window) -> Any:
            g, gkp, gvp, args = fresh()
            out = gp.rope_cache_attention(*args, window=window, backend=name)
            return out, g, gkp, gvp

        def direct(kernel: Fn, out: GPUArray, fresh: Fn = fresh, window: int = window,
                   dim: int = dim) -> None:  # fmt: skip
            kernel(*fresh()[3], out, 1.0 / math.sqrt(dim), window)

        needs = (index,) if table is d else (index, table)
        result.append(Case(label, run, (out, want_proj, want_keys, want_values), d, direct,
                           needs=needs, parts=(d, d, d, d), direct_expected=out))  # fmt: skip
    return result


def _advance_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, rows, column_view in (("one row", 1, False), ("four rows", 4, False),
                                     ("positions a column view", 3, True)):  # fmt: skip
        tokens = rng.integers(0, 9, size=(rows, 1)).astype(_np(d))
        chosen = rng.integers(0, 30_000, size=(rows,))
        positions = rng.integers(0, 500, size=(rows, 2 if column_view else 1)).astype(_np(d))
        slots = rng.integers(0, 500, size=(rows,)).astype(np.int32)
        ends = rng.integers(0, 500, size=(rows,)).astype(_np(d))
        want_pos = f64(positions)
        want_pos[:, 0] += 1

        def run(name: str, tokens: np.ndarray = tokens, chosen: Any = chosen,
                positions: np.ndarray = positions, slots: np.ndarray = slots,
                ends: np.ndarray = ends) -> Any:  # fmt: skip
            gt, gpos = _up(tokens, device), _up(positions, device)
            gs, ge = _up(slots, device), _up(ends, device)
            gp.decode_advance(gt, _index(chosen, dt.int64, device), gpos[:, :1], gs, ge,
                              backend=name)  # fmt: skip
            return gt, gpos, gs, ge

        expected = (f64(chosen)[:, None], want_pos, f64(slots) + 1, f64(ends) + 1)
        result.append(Case(label, run, expected, d, parts=(d, d, dt.int32, d),
                           needs=(dt.int64, dt.int32)))  # fmt: skip
    return result


# -- attention over a cache ----------------------------------------------------------
def _sdpa_cache_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, starts: np.ndarray,
                    ends: np.ndarray, scale: float, window: int) -> np.ndarray:  # fmt: skip
    b_, hq, sq, _ = q.shape
    group = hq // k.shape[1]
    out = np.zeros((b_, hq, sq, v.shape[3]))
    for b, h, i in np.ndindex(b_, hq, sq):
        t = int(ends[b]) - sq + i  # the query's own slot
        lo = int(starts[b]) if window == 0 else max(int(starts[b]), t - window + 1)
        seen = np.arange(lo, t + 1)
        if seen.size == 0:
            continue  # sees no key: zeros
        kv = h // group
        scores = k[b, kv, seen] @ q[b, h, i] * scale
        w = np.exp(scores - scores.max())
        out[b, h, i] = (w / w.sum()) @ v[b, kv, seen]
    return out


#: label, B, Hq, Hkv, Sq, L, D, Dv, scale, window, q given as a (B, S, H, D) transpose
SDPA_CACHE: tuple[tuple[str, int, int, int, int, int, int, int, Any, int, bool], ...] = (
    ("decode step, GQA", 3, 4, 2, 1, 10, 8, 8, None, 0, False),
    ("prefill, scale given", 2, 2, 2, 4, 7, 4, 6, 0.4, 0, True),
    ("sliding window", 2, 3, 1, 3, 12, 4, 4, None, 4, False),
    ("queries before the start see nothing", 2, 2, 1, 3, 6, 4, 5, None, 0, False),
)


def _sdpa_cache_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for n, (label, b, hq, hkv, sq, length, dim, dv, scale, window, transposed) in enumerate(
        SDPA_CACHE
    ):
        if transposed:
            qp = draw(rng, (b, sq, hq, dim), d, (-2.0, 2.0))
            gq = _up(qp, device).transpose((0, 2, 1, 3))
            hq_ = np.transpose(qp, (0, 2, 1, 3))
        else:
            hq_ = draw(rng, (b, hq, sq, dim), d, (-2.0, 2.0))
            gq = _up(hq_, device)
        # k is every other head of a wider cache: the kernel must follow its strides
        kp = draw(rng, (b, 2 * hkv, length, dim), d, (-2.0, 2.0))
        hv = draw(rng, (b, hkv, length, dv), d, (-2.0, 2.0))
        gk, gv = _up(kp, device)[:, ::2], _up(hv, device)
        ends = rng.integers(sq, length + 1, size=(b,))
        ends[0] = length  # one row fills the cache to its end
        starts = np.array([int(rng.integers(0, e - sq + 1)) for e in ends])
        if n == 3:  # starts after the first queries' slots: those rows get zeros
            starts = ends - 1
        index = dt.int32 if n % 2 else dt.int64
        g_starts, g_ends = _index(starts, index, device), _index(ends, index, device)
        s = 1.0 / math.sqrt(dim) if scale is None else scale
        expected = _sdpa_cache_ref(f64(hq_), f64(kp[:, ::2]), f64(hv), starts, ends, s, window)

        def run(name: str, q: GPUArray = gq, k: GPUArray = gk, v: GPUArray = gv,
                st: GPUArray = g_starts, en: GPUArray = g_ends, scale: Any = scale,
                window: int = window) -> Any:  # fmt: skip
            return gp.sdpa_causal_cache(q, k, v, st, en, scale, window=window, backend=name)

        def direct(kernel: Fn, out: GPUArray, q: GPUArray = gq, k: GPUArray = gk,
                   v: GPUArray = gv, st: GPUArray = g_starts, en: GPUArray = g_ends,
                   s: float = s, window: int = window) -> None:  # fmt: skip
            kernel(q, k, v, st, en, out, s, window)

        result.append(Case(label, run, expected, d, direct, needs=(index,)))
    return result


# -- products ------------------------------------------------------------------------
def _gather_matmul_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, rows, groups, n_out, k_in, x_kind, w_transposed, index in (
        ("decode rows, repeated groups", 4, 3, 5, 16, d, False, dt.int32),
        ("one row", 1, 2, 7, 8, d, False, dt.int64),
        ("weights a transposed view", 6, 4, 3, 5, d, True, dt.int32),
        ("wider x", 3, 2, 4, 6, WIDER.get(d), False, dt.int64),
    ):  # fmt: skip
        if x_kind is None:  # float64 has no wider partner
            continue
        hx = draw(rng, (rows, k_in), x_kind, (-1.0, 1.0))
        if w_transposed:
            wp = draw(rng, (groups, k_in, n_out), d, (-1.0, 1.0))
            gw = _up(wp, device).mT
            w = np.swapaxes(wp, 1, 2)
        else:
            w = draw(rng, (groups, n_out, k_in), d, (-1.0, 1.0))
            gw = _up(w, device)
        ids = rng.integers(0, groups, size=(rows,))
        expected = np.stack([f64(w[int(ids[t])]) @ f64(hx[t]) for t in range(rows)])
        gx, gi = _up(hx, device), _index(ids, index, device)
        out_dtype = x_kind if x_kind is not d else d

        def run(name: str, gx: GPUArray = gx, gw: GPUArray = gw, gi: GPUArray = gi) -> Any:
            return gp.gather_matmul(gx, gw, gi, backend=name)

        def direct(kernel: Fn, out: GPUArray, gx: GPUArray = gx, gw: GPUArray = gw,
                   gi: GPUArray = gi) -> None:  # fmt: skip
            kernel(gx, gw, gi, out)

        needs = (index,) if x_kind is d else (index, x_kind)
        result.append(Case(label, run, expected, out_dtype, direct, needs=needs))
    return result


def _linear_rows_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, rows, n_out, k_in, x_kind, views in (
        ("one row, K a multiple of 8", 1, 12, 64, d, False),
        ("eight rows", 8, 5, 24, d, False),
        ("stepped x, transposed weight", 3, 6, 7, d, True),
        ("no rows", 0, 4, 8, d, False),
        ("wider x", 2, 5, 16, WIDER.get(d), False),
    ):  # fmt: skip
        if x_kind is None:  # float64 has no wider partner
            continue
        if views:
            xp = draw(rng, (2 * rows, k_in), x_kind, (-1.0, 1.0))
            gx, hx = _up(xp, device)[::2], xp[::2]
            wp = draw(rng, (k_in, n_out), d, (-1.0, 1.0))
            gw, w = _up(wp, device).mT, wp.T
        else:
            hx = draw(rng, (rows, k_in), x_kind, (-1.0, 1.0))
            w = draw(rng, (n_out, k_in), d, (-1.0, 1.0))
            gx, gw = _up(hx, device), _up(w, device)
        expected = np.zeros((rows, n_out))
        for m in range(rows):  # one matrix-vector product per row
            expected[m] = f64(w) @ f64(hx[m])
        out_dtype = x_kind if x_kind is not d else d

        def run(name: str, gx: GPUArray = gx, gw: GPUArray = gw) -> Any:
            return gp.linear_rows(gx, gw, backend=name)

        def direct(kernel: Fn, out: GPUArray, gx: GPUArray = gx, gw: GPUArray = gw) -> None:
            if out.size:
                kernel(gx, gw, out)

        needs = () if x_kind is d else (x_kind,)
        result.append(Case(label, run, expected, out_dtype, direct, needs=needs))
    return result


# -- fused elementwise and norm ------------------------------------------------------
def _silu_mul_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, shape, up_kind, transposed in (
        ("rows of an MLP", (3, 16), d, False),
        ("transposed views", (5, 4), d, True),
        ("0-d", (), d, False),
        ("size-0", (0, 4), d, False),
        ("wider up", (2, 6), WIDER.get(d), False),
    ):  # fmt: skip
        if up_kind is None:
            continue
        hg = draw(rng, shape, d, (-6.0, 6.0))
        hu = draw(rng, shape, up_kind, (-3.0, 3.0))
        gg, gu = _up(hg, device), _up(hu, device)
        if transposed:
            gg, gu, hg, hu = gg.mT, gu.mT, hg.T, hu.T
        g64 = f64(hg)
        expected = g64 / (1.0 + np.exp(-g64)) * f64(hu)
        out_dtype = up_kind if up_kind is not d else d

        def run(name: str, gg: GPUArray = gg, gu: GPUArray = gu) -> Any:
            return gp.silu_mul(gg, gu, backend=name)

        def direct(kernel: Fn, out: GPUArray, gg: GPUArray = gg, gu: GPUArray = gu) -> None:
            if out.size:
                kernel(gg, gu, out)

        needs = () if up_kind is d else (up_kind,)
        result.append(Case(label, run, expected, out_dtype, direct, needs=needs))
    return result


def _add_rmsnorm_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, shape, eps, gamma_kind, transposed in (
        ("decode rows", (2, 32), 1e-6, d, False),
        ("3-d, eps 1e-3", (2, 3, 8), 1e-3, d, False),
        ("transposed views", (6, 3), 1e-5, d, True),
        ("1-d", (16,), 1e-6, d, False),
        ("wider gamma", (3, 8), 1e-5, WIDER.get(d), False),
    ):  # fmt: skip
        if gamma_kind is None:
            continue
        hx, hy = draw(rng, shape, d, (-3.0, 3.0)), draw(rng, shape, d, (-3.0, 3.0))
        gx, gy = _up(hx, device), _up(hy, device)
        if transposed:
            gx, gy, hx, hy = gx.mT, gy.mT, hx.T, hy.T
        hgam = draw(rng, (hx.shape[-1],), gamma_kind, (0.5, 2.0))
        # the sum is rounded to its dtype before the norm reads it, as separate ops would
        total = (f64(hx) + f64(hy)).astype(_np(d))
        t64 = f64(total)
        rms = np.sqrt(np.mean(t64 * t64, axis=-1, keepdims=True) + eps)
        normed = t64 / rms * f64(hgam)
        out_dtype = gamma_kind if gamma_kind is not d else d
        ggam = _up(hgam, device)

        def run(name: str, gx: GPUArray = gx, gy: GPUArray = gy, ggam: GPUArray = ggam,
                eps: float = eps) -> Any:  # fmt: skip
            return gp.add_rmsnorm(gx, gy, ggam, eps, backend=name)

        def direct(kernel: Fn, out: GPUArray, gx: GPUArray = gx, gy: GPUArray = gy,
                   ggam: GPUArray = ggam, eps: float = eps) -> None:  # fmt: skip
            # the poisoned output is the norm; the sum goes to a scratch array
            total_out = GPUArray.empty(out.shape, d, out.device)
            kernel(gx, gy, ggam, total_out, out, eps)

        needs = () if gamma_kind is d else (gamma_kind,)
        result.append(Case(label, run, (t64, normed), out_dtype, direct, needs=needs,
                           parts=(d, out_dtype), direct_expected=normed))  # fmt: skip
    return result


def specs() -> list[OpSpec]:
    return [
        OpSpec("embedding", "decode", FLOATS, _embedding_cases, "exact"),
        OpSpec("rope_at_inplace", "decode", FLOATS, _rope_at_cases, "transcendental"),
        OpSpec("kv_cache_write", "decode", FLOATS, _kv_cases, "exact"),
        OpSpec("kv_cache_write_pair", "decode", FLOATS, _kv_pair_cases, "exact"),
        OpSpec("rope_kv_cache_write", "decode", FLOATS, _rope_kv_cases, "transcendental"),
        OpSpec("decode_advance", "decode", (dt.int32, dt.int64), _advance_cases, "exact"),
        OpSpec("rope_cache_attention", "decode", FLOATS, _rope_attention_cases, "reduction"),
        OpSpec("sdpa_causal_cache", "decode", FLOATS, _sdpa_cache_cases, "reduction"),
        OpSpec("gather_matmul", "decode", FLOATS, _gather_matmul_cases, "reduction"),
        OpSpec("silu_mul", "decode", FLOATS, _silu_mul_cases, "transcendental"),
        OpSpec("add_rmsnorm", "decode", FLOATS, _add_rmsnorm_cases, "reduction"),
        OpSpec("linear_rows", "decode", FLOATS, _linear_rows_cases, "reduction"),
    ]
