"""sdpa_causal, rope_inplace, bias_add_inplace and linear_bias_gelu on the GPU against
NumPy float64 references, with views, GQA, a KV cache and poisoned outputs."""

from __future__ import annotations

import math

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit.testing import poison
from pygpukit_cuda import linalg_nn

pytestmark = pytest.mark.gpu

FLOATS = ["float16", "bfloat16", "float32", "float64"]
TOL = {"float64": 1e-11, "float32": 1e-5, "float16": 5e-3, "bfloat16": 2e-2}


def draw(rng: np.random.Generator, shape: tuple[int, ...], name: str, lo=-2.0, hi=2.0):  # type: ignore[no-untyped-def]
    return rng.uniform(lo, hi, shape).astype(dt.as_dtype(name).to_numpy_dtype())


def rel(got: np.ndarray, want: np.ndarray) -> float:
    g = np.asarray(got, dtype=np.float64)
    assert np.isfinite(g).all(), "unwritten (poisoned) or non-finite output"
    return float(np.linalg.norm(g - want) / np.linalg.norm(want))


def sdpa_ref(q, k, v, scale):  # type: ignore[no-untyped-def]
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    g = q.shape[-3] // k.shape[-3]
    k, v = np.repeat(k, g, axis=-3), np.repeat(v, g, axis=-3)
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    sq, skv = q.shape[-2], k.shape[-2]
    mask = np.arange(skv)[None, :] > np.arange(sq)[:, None] + (skv - sq)
    s = np.where(mask, -np.inf, s)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.matmul(w / w.sum(axis=-1, keepdims=True), v)


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize(
    "qs,ks,vs",
    [
        ((2, 4, 37, 64), (2, 4, 37, 64), (2, 4, 37, 64)),   # self-attention, odd length
        ((1, 8, 5, 32), (1, 2, 70, 32), (1, 2, 70, 48)),    # GQA with a KV cache
        ((3, 1, 1, 16), (3, 1, 129, 16), (3, 1, 129, 16)),  # decoding one token
        ((2, 100, 128), (1, 100, 128), (1, 100, 128)),      # no batch dims, head_dim 128
    ],
)  # fmt: skip
def test_sdpa_causal(name: str, qs, ks, vs) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(sum(qs) + sum(ks))
    q, k, v = draw(rng, qs, name), draw(rng, ks, name), draw(rng, vs, name)
    scale = 1.0 / math.sqrt(qs[-1])
    out = poison(gp.empty((*qs[:-1], vs[-1]), dtype=name, device="cuda"))
    linalg_nn.sdpa_causal(*(gp.asarray(x, device="cuda") for x in (q, k, v)), out, scale)
    assert rel(out.to_numpy(), sdpa_ref(q, k, v, scale)) < TOL[name]


def test_sdpa_strided_q_mixed_dtypes_through_the_op() -> None:
    rng = np.random.default_rng(1)
    parent = draw(rng, (2, 9, 4, 16), "float32")  # (B, S, H, D), viewed as (B, H, S, D)
    k, v = draw(rng, (2, 2, 9, 16), "float16"), draw(rng, (2, 2, 9, 8), "float32")
    gq = gp.asarray(parent, device="cuda").transpose((0, 2, 1, 3))
    got = gp.sdpa_causal(gq, gp.asarray(k, device="cuda"), gp.asarray(v, device="cuda"), 0.3)
    assert got.dtype == gp.float32
    assert rel(got.to_numpy(), sdpa_ref(parent.transpose(0, 2, 1, 3), k, v, 0.3)) < 1e-5


@pytest.mark.parametrize("name", FLOATS)
def test_rope_inplace_on_views(name: str) -> None:
    rng = np.random.default_rng(2)
    seq, hq, hk, d = 7, 3, 1, 16
    qp, kp = draw(rng, (2, seq, 2 * hq, d), name), draw(rng, (2, seq, hk, d + 2), name)
    ang = rng.uniform(-math.pi, math.pi, (seq, d // 2))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)

    def ref(x):  # type: ignore[no-untyped-def]
        x = np.asarray(x, np.float64)
        c, s = cos[:, None, :].astype(np.float64), sin[:, None, :].astype(np.float64)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)

    gq, gk = gp.asarray(qp, device="cuda"), gp.asarray(kp, device="cuda")
    gp.rope_inplace(gq[..., ::2, :], gk[..., 1 : d + 1], gp.asarray(cos, device="cuda"),
                    gp.asarray(sin, device="cuda"))  # fmt: skip
    want_q, want_k = qp.astype(np.float64), kp.astype(np.float64)
    want_q[..., ::2, :] = ref(qp[..., ::2, :])
    want_k[..., 1 : d + 1] = ref(kp[..., 1 : d + 1])
    tol = {"float64": 1e-7, "float32": 1e-6}.get(name, 1e-2)  # float32 tables
    assert rel(gq.to_numpy(), want_q) < tol
    assert rel(gk.to_numpy(), want_k) < tol


@pytest.mark.parametrize("name", ["float32", "bfloat16"])
def test_rope_inplace_q_and_k_in_one_buffer(name: str) -> None:
    """q and k as views of one buffer: apart (two batch rows) they take one launch; where
    their extents interleave (heads split per position, every other head) they take two."""
    from pygpukit_cuda.linalg_nn import _apart

    rng = np.random.default_rng(3)
    seq, h, d = 5, 2, 8
    xp = draw(rng, (2, seq, 2 * h, d), name)
    ang = rng.uniform(-math.pi, math.pi, (seq, d // 2))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    c, s = cos[:, None, :].astype(np.float64), sin[:, None, :].astype(np.float64)

    def ref(x: np.ndarray) -> np.ndarray:
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)

    gc, gs = gp.asarray(cos, device="cuda"), gp.asarray(sin, device="cuda")
    tol = 1e-6 if name == "float32" else 2e-2
    want = ref(np.asarray(xp, np.float64))
    for q_of, k_of, apart in ((np.s_[:, :, :h], np.s_[:, :, h:], False),
                              (np.s_[:1], np.s_[1:], True),
                              (np.s_[:, :, ::2], np.s_[:, :, 1::2], False)):  # fmt: skip
        gx = gp.asarray(xp, device="cuda")
        q, k = gx[q_of], gx[k_of]
        assert _apart(q, k) is apart
        gp.rope_inplace(q, k, gc, gs)
        assert rel(gx.to_numpy(), want) < tol


@pytest.mark.parametrize("name,bias_name", [("float32", "float16"), ("bfloat16", "bfloat16"),
                                            ("float64", "float32"), ("int32", "int8")])  # fmt: skip
def test_bias_add_inplace_on_a_stepped_view(name: str, bias_name: str) -> None:
    rng = np.random.default_rng(4)
    d, bd = dt.as_dtype(name), dt.as_dtype(bias_name)
    if d.is_integer:
        parent = rng.integers(-100, 100, (5, 12)).astype(d.to_numpy_dtype())
        bias = rng.integers(-100, 100, (6,)).astype(bd.to_numpy_dtype())
    else:
        parent, bias = draw(rng, (5, 12), name), draw(rng, (6,), bias_name)
    g = gp.asarray(parent, device="cuda")
    gp.bias_add_inplace(g[:, ::2], gp.asarray(bias, device="cuda"))
    want = parent.copy()
    want[:, ::2] = (want[:, ::2].astype(np.float64) + bias.astype(np.float64)).astype(want.dtype)
    np.testing.assert_array_equal(g.to_numpy(), want)


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_linear_bias_gelu(name: str, approximate: str) -> None:
    from math import erf

    rng = np.random.default_rng(6)
    x, w, b = draw(rng, (2, 33, 40), name), draw(rng, (24, 40), name, -1, 1), draw(rng, (24,), name)
    y = np.asarray(x, np.float64) @ np.asarray(w, np.float64).T + np.asarray(b, np.float64)
    if approximate == "none":
        want = 0.5 * y * (1 + np.vectorize(erf)(y / math.sqrt(2)))
    else:
        want = 0.5 * y * (1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y**3)))
    gx = gp.asarray(x, device="cuda")
    gw = gp.asarray(np.ascontiguousarray(w.T), device="cuda").mT  # a transposed weight view
    out = poison(gp.empty((2, 33, 24), dtype=name, device="cuda"))
    linalg_nn.linear_bias_gelu(gx, gw, gp.asarray(b, device="cuda"), out, approximate)
    assert rel(out.to_numpy(), want) < {"float64": 1e-12, "float32": 1e-5}.get(name, 1e-2)


def test_sdpa_refuses_a_value_dim_over_its_limit_before_launch() -> None:
    q = gp.asarray(np.ones((1, 2, 300), np.float32), device="cuda")
    out = gp.empty((1, 2, 300), dtype="float32", device="cuda")
    with pytest.raises(NotImplementedError, match="head_dim"):
        linalg_nn.sdpa_causal(q, q, q, out, 0.1)
