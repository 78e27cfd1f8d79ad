"""Conformance specs of the neural-network ops: softmax, log_softmax, layernorm, rmsnorm,
sdpa_causal and sdpa (GQA and KV-cache shapes), rope_inplace, bias_add_inplace, linear_bias_gelu.

References are float64. Softmax inputs include a +1000 shift, which overflows a kernel
that skips the max subtraction. The in-place ops update views of larger arrays and the
whole parents are compared, so writes outside the views are caught.
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
from ..catalog import GELU_REF, Case, Layout, OpSpec
from ._common import draw, f64, upload

FLOATS = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
#: a wider float to pair with each dtype in mixed-dtype cases
WIDER = {dt.float16: dt.float32, dt.bfloat16: dt.float32, dt.float32: dt.float64}
Cases = Callable[[np.random.Generator, DataType, Device], list[Case]]


def _np(d: DataType) -> Any:
    return d.to_numpy_dtype()


# -- softmax ---------------------------------------------------------------------------
def _softmax_ref(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    total = np.sum(np.exp(shifted), axis=axis, keepdims=True)
    return np.asarray(shifted - np.log(total) if log else np.exp(shifted) / total)


def _softmax_cases(op: str) -> Cases:
    fn = getattr(gp, op)

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        result = []
        for label, layout, axis, shift in (
            ("last axis", Layout("c", (3, 5)), -1, 0.0),
            ("axis 0 of a transposed view", Layout("t", (6, 3), transpose=True), 0, 0.0),
            ("axis 1 of a reversed-stepped 3-d view",
             Layout("rs", (2, 7, 3), key=(slice(None), slice(None, None, -2))), 1, 0.0),
            ("large inputs (+1000)", Layout("c", (2, 9)), -1, 1000.0),
            ("broadcast view", Layout("b", (1, 4), broadcast=(3, 4)), 0, 0.0),
            ("size-1 axis", Layout("c", (4, 1)), 1, 0.0),
            ("1-d", Layout("c", (7,)), 0, 0.0),
            ("size-0", Layout("c", (0, 3)), -1, 0.0),
        ):  # fmt: skip
            host = (f64(draw(rng, layout.parent, d, (-6.0, 6.0))) + shift).astype(_np(d))
            g, h = upload(host, layout, device)
            a = axis % h.ndim
            expected = _softmax_ref(f64(h), a, op == "log_softmax")

            def run(name: str, g: GPUArray = g, axis: int = axis) -> Any:
                return fn(g, axis=axis, backend=name)

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g,
                       a: int = a) -> None:  # fmt: skip
                if out.size:
                    kernel(g, out, a)

            result.append(Case(label, run, expected, d, direct))
        return result

    return cases


# -- layernorm / rmsnorm -----------------------------------------------------------------
def _norm_ref(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None, eps: float) -> Any:
    if beta is None:
        return x * gamma / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


NORM_LAYOUTS = (
    ("contiguous", Layout("c", (3, 8)), 1e-5),
    ("transposed 3-d", Layout("t", (2, 6, 4), transpose=True), 1e-3),
    ("offset rows", Layout("o", (5, 9), key=(slice(1, 4), slice(2, None))), 1e-5),
    ("broadcast rows", Layout("b", (1, 5), broadcast=(3, 5)), 0.0),
    ("one feature", Layout("c", (4, 1)), 1e-2),
    ("1-d", Layout("c", (16,)), 1e-5),
    ("no rows", Layout("c", (0, 4)), 1e-5),
)


def _norm_cases(op: str) -> Cases:
    layer = op == "layernorm"

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        result = []
        wider = WIDER.get(d)
        entries = [(label, lay, eps, d) for label, lay, eps in NORM_LAYOUTS]
        if wider is not None:
            entries.append((f"{wider.name} parameters", Layout("c", (2, 6)), 1e-5, wider))
        for label, layout, eps, pd in entries:
            g, h = upload(draw(rng, layout.parent, d, (-4.0, 4.0)), layout, device)
            n = h.shape[-1]
            hg, hb = draw(rng, (n,), pd, (0.5, 2.0)), draw(rng, (n,), pd, (-1.0, 1.0))
            gg, gb = GPUArray.from_numpy(hg, device), GPUArray.from_numpy(hb, device)
            expected = _norm_ref(f64(h), f64(hg), f64(hb) if layer else None, eps)
            out_dtype = pd if pd is not d else d

            def run(name: str, g: GPUArray = g, gg: GPUArray = gg, gb: GPUArray = gb,
                    eps: float = eps) -> Any:  # fmt: skip
                if layer:
                    return gp.layernorm(g, gg, gb, eps, backend=name)
                return gp.rmsnorm(g, gg, eps, backend=name)

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g,
                       gg: GPUArray = gg, gb: GPUArray = gb, eps: float = eps) -> None:  # fmt: skip
                if out.size:
                    kernel(g, gg, gb, out, eps) if layer else kernel(g, gg, out, eps)

            needs = (pd,) if pd is not d else ()
            result.append(Case(label, run, expected, out_dtype, direct, needs=needs))
        return result

    return cases


# -- attention -----------------------------------------------------------------------
def _sdpa_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float,
              causal: bool = True) -> np.ndarray:  # fmt: skip
    hq, hkv = q.shape[-3], k.shape[-3]
    group = hq // hkv
    k = np.repeat(k, group, axis=-3)
    v = np.repeat(v, group, axis=-3)
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    sq, skv = q.shape[-2], k.shape[-2]
    if causal:
        visible = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)
        scores = np.where(visible, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.asarray(np.matmul(weights, v))


SDPA: tuple[
    tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...], float | None, bool], ...
] = (
    # label, q shape, k shape, v shape, scale, view q as a (B, S, H, D) transpose
    ("self-attention", (2, 2, 4, 8), (2, 2, 4, 8), (2, 2, 4, 8), None, False),
    ("GQA with a KV cache", (1, 4, 3, 4), (1, 2, 6, 4), (1, 2, 6, 5), None, False),
    ("no batch dims, scale given", (2, 5, 4), (1, 5, 4), (1, 5, 3), 0.3, False),
    ("q from a (B, S, H, D) layout", (2, 3, 4, 6), (2, 3, 4, 6), (2, 3, 4, 6), None, True),
    ("one query (decoding)", (1, 2, 1, 4), (1, 1, 7, 4), (1, 1, 7, 4), None, False),
)


#: sdpa (no mask) also takes fewer keys than queries (cross-attention to a short source)
SDPA_FULL = (*SDPA, ("fewer keys than queries", (1, 2, 6, 4), (1, 2, 3, 4), (1, 2, 3, 4), None,
                     False))  # fmt: skip


def _sdpa_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    return _attention_cases(rng, d, device, True)


def _sdpa_full_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    return _attention_cases(rng, d, device, False)


def _attention_cases(rng: np.random.Generator, d: DataType, device: Device,
                     causal: bool) -> list[Case]:  # fmt: skip
    result = []
    op = gp.sdpa_causal if causal else gp.sdpa
    for label, qs, ks, vs, scale, transposed in SDPA if causal else SDPA_FULL:
        if transposed:
            parent = draw(rng, (qs[0], qs[2], qs[1], qs[3]), d, (-2.0, 2.0))
            gq = GPUArray.from_numpy(parent, device).transpose((0, 2, 1, 3))
            hq = np.transpose(parent, (0, 2, 1, 3))
        else:
            hq = draw(rng, qs, d, (-2.0, 2.0))
            gq = GPUArray.from_numpy(hq, device)
        hk, hv = draw(rng, ks, d, (-2.0, 2.0)), draw(rng, vs, d, (-2.0, 2.0))
        gk, gv = GPUArray.from_numpy(hk, device), GPUArray.from_numpy(hv, device)
        s = 1.0 / math.sqrt(qs[-1]) if scale is None else scale
        expected = _sdpa_ref(f64(hq), f64(hk), f64(hv), s, causal)

        def run(name: str, q: GPUArray = gq, k: GPUArray = gk, v: GPUArray = gv,
                scale: Any = scale) -> Any:  # fmt: skip
            return op(q, k, v, scale, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, q: GPUArray = gq, k: GPUArray = gk,
                   v: GPUArray = gv, s: float = s) -> None:  # fmt: skip
            kernel(q, k, v, out, s)

        result.append(Case(label, run, expected, d, direct))
    return result


# -- in-place ops --------------------------------------------------------------------
def _rope_ref(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    c, s = cos[:, None, :], sin[:, None, :]  # (S, 1, D/2) against (..., S, H, D/2)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def _rope_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    wider = WIDER.get(d)
    for label, batch, seq, hq, hk, dim, table in (
        ("single sequence", (), 4, 2, 2, 8, d),
        ("batched GQA", (2,), 3, 4, 1, 6, d),
        ("float tables", (), 5, 1, 2, 4, wider or d),
    ):  # fmt: skip
        # q and k are views into wider parents: q takes every other head, k drops a column
        qp = draw(rng, (*batch, seq, 2 * hq, dim), d, (-3.0, 3.0))
        kp = draw(rng, (*batch, seq, hk, dim + 2), d, (-3.0, 3.0))
        angles = rng.uniform(-math.pi, math.pi, size=(seq, dim // 2))
        cos_h = np.cos(angles).astype(_np(table))
        sin_h = np.sin(angles).astype(_np(table))
        want_q, want_k = qp.copy(), kp.copy()
        want_q[..., ::2, :] = _rope_ref(f64(qp[..., ::2, :]), f64(cos_h), f64(sin_h))
        want_k[..., 1 : dim + 1] = _rope_ref(f64(kp[..., 1 : dim + 1]), f64(cos_h), f64(sin_h))

        def run(name: str, qp: np.ndarray = qp, kp: np.ndarray = kp, cos_h: Any = cos_h,
                sin_h: Any = sin_h, dim: int = dim) -> Any:  # fmt: skip
            gq, gk = GPUArray.from_numpy(qp, device), GPUArray.from_numpy(kp, device)
            cos = GPUArray.from_numpy(cos_h, device)
            sin = GPUArray.from_numpy(sin_h, device)
            gp.rope_inplace(gq[..., ::2, :], gk[..., 1 : dim + 1], cos, sin, backend=name)
            return gq, gk

        needs = (table,) if table is not d else ()
        expected = (f64(want_q), f64(want_k))
        result.append(Case(label, run, expected, d, parts=(d, d), needs=needs))
    return result


BIAS_DTYPES = tuple(d for d in dt.NUMERIC_DTYPES if not d.is_float8 and d.kind != "b")


def _bias_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    narrower = {dt.float32: dt.float16, dt.float64: dt.float32, dt.int32: dt.int8}.get(d)
    entries: list[tuple[str, tuple[int, ...], Any, DataType]] = [
        ("rows of a stepped view", (3, 8), (slice(None), slice(None, None, 2)), d),
        ("reversed 3-d", (2, 3, 4), (slice(None, None, -1),), d),
        ("1-d", (5,), (), d),
    ]
    if narrower is not None:
        entries.append((f"{narrower.name} bias", (2, 6), (slice(None), slice(1, 5)), narrower))
    for label, shape, key, bias_dtype in entries:
        parent = draw(rng, shape, d)
        view_h = parent[key] if key != () else parent
        bias_h = draw(rng, (view_h.shape[-1],), bias_dtype)
        want = parent.copy()
        target = want[key] if key != () else want
        if d.is_floating:
            target[...] = (f64(view_h) + f64(bias_h)).astype(_np(d))
        else:
            target[...] = (view_h.astype(np.int64) + bias_h.astype(np.int64)).astype(_np(d))

        def run(name: str, parent: np.ndarray = parent, key: Any = key,
                bias_h: np.ndarray = bias_h) -> Any:  # fmt: skip
            g = GPUArray.from_numpy(parent, device)
            gp.bias_add_inplace(g[key] if key != () else g, GPUArray.from_numpy(bias_h, device),
                                backend=name)  # fmt: skip
            return g

        needs = (bias_dtype,) if bias_dtype is not d else ()
        result.append(Case(label, run, want, d, needs=needs, op_kind="elementwise"))
    return result


# -- fused linear --------------------------------------------------------------------
def _linear_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, x_layout, out_features, approximate, weight_transposed in (
        ("2-d", Layout("c", (3, 8)), 5, "none", False),
        ("3-d, tanh", Layout("c", (2, 3, 4)), 6, "tanh", False),
        ("transposed x and weight", Layout("t", (6, 4), transpose=True), 3, "none", True),
        ("1-d", Layout("c", (5,)), 2, "tanh", False),
        ("no rows", Layout("c", (0, 4)), 3, "none", False),
    ):  # fmt: skip
        g, h = upload(draw(rng, x_layout.parent, d, (-2.0, 2.0)), x_layout, device)
        n_in = h.shape[-1]
        if weight_transposed:
            wh = draw(rng, (n_in, out_features), d, (-1.0, 1.0))
            gw = GPUArray.from_numpy(wh, device).mT
            w = wh.T
        else:
            w = draw(rng, (out_features, n_in), d, (-1.0, 1.0))
            gw = GPUArray.from_numpy(w, device)
        bh = draw(rng, (out_features,), d, (-1.0, 1.0))
        gb = GPUArray.from_numpy(bh, device)
        expected = GELU_REF[approximate](f64(h) @ f64(w).T + f64(bh))

        def run(name: str, g: GPUArray = g, gw: GPUArray = gw, gb: GPUArray = gb,
                approx: str = approximate) -> Any:  # fmt: skip
            return gp.linear_bias_gelu(g, gw, gb, approximate=approx, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g, gw: GPUArray = gw,
                   gb: GPUArray = gb, approx: str = approximate) -> None:  # fmt: skip
            if out.size:
                kernel(g, gw, gb, out, approx)

        result.append(Case(label, run, expected, d, direct))
    return result


def specs() -> list[OpSpec]:
    return [
        OpSpec("softmax", "nn", FLOATS, _softmax_cases("softmax"), "reduction"),
        OpSpec("log_softmax", "nn", FLOATS, _softmax_cases("log_softmax"), "reduction"),
        OpSpec("layernorm", "nn", FLOATS, _norm_cases("layernorm"), "reduction"),
        OpSpec("rmsnorm", "nn", FLOATS, _norm_cases("rmsnorm"), "reduction"),
        OpSpec("sdpa_causal", "nn", FLOATS, _sdpa_cases, "reduction"),
        OpSpec("sdpa", "nn", FLOATS, _sdpa_full_cases, "reduction"),
        OpSpec("rope_inplace", "nn", FLOATS, _rope_cases, "reduction"),
        OpSpec("bias_add_inplace", "nn", BIAS_DTYPES, _bias_cases, "elementwise"),
        OpSpec("linear_bias_gelu", "nn", FLOATS, _linear_cases, "reduction"),
    ]
