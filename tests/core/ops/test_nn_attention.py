"""sdpa_causal: float64 reference with explicit loops, GQA, causality, the layout, errors."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit._ops._core import kernel_on
from pygpukit.testing import assert_allclose, poison, views

FLOAT = st.sampled_from([gp.float16, gp.bfloat16, gp.float32, gp.float64])
EXAMPLES = settings(max_examples=50, deadline=None)
SMALL = (-2.0, 2.0)  # realistic logits: softmax neither flat nor one-hot


@pytest.fixture(autouse=True)
def on_cpu() -> Iterator[None]:
    """These tests check the CPU kernels: new arrays stay on the CPU even beside a GPU."""
    with gp.config.use(device="cpu"):
        yield


def ref_sdpa(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    """Loop over batch, query head and query position: an implementation unlike the kernel's."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    *batch, hq, sq, _ = q.shape
    hkv, skv = k.shape[-3], k.shape[-2]
    out = np.zeros((*batch, hq, sq, v.shape[-1]))
    for b in np.ndindex(*batch):
        for h in range(hq):
            kv = h // (hq // hkv)
            for i in range(sq):
                visible = i + (skv - sq) + 1  # bottom-right aligned causal mask
                s = k[(*b, kv)][:visible] @ q[(*b, h, i)] * scale
                w = np.exp(s - s.max())
                out[(*b, h, i)] = (w / w.sum()) @ v[(*b, kv)][:visible]
    return out


@st.composite
def attention_inputs(draw: st.DrawFn) -> tuple[gp.GPUArray, gp.GPUArray, gp.GPUArray]:
    batch = draw(st.lists(st.integers(1, 2), max_size=2).map(tuple))
    hkv = draw(st.integers(1, 3))
    hq = hkv * draw(st.integers(1, 3))  # GQA groups of 1 (MHA) to 3
    sq = draw(st.integers(0, 4))
    skv = sq + draw(st.integers(0, 3))
    d = draw(st.integers(1, 5))
    dv = draw(st.integers(0, 5))
    dtype = draw(FLOAT)
    q = draw(views(dtype, st.just((*batch, hq, sq, d)), SMALL))
    k = draw(views(dtype, st.just((*batch, hkv, skv, d)), SMALL))
    v = draw(views(dtype, st.just((*batch, hkv, skv, dv))))
    return q, k, v


@EXAMPLES
@given(qkv=attention_inputs(), explicit_scale=st.booleans())
def test_sdpa_causal_matches_reference(
    qkv: tuple[gp.GPUArray, gp.GPUArray, gp.GPUArray], explicit_scale: bool
) -> None:
    q, k, v = qkv
    scale = 0.7 if explicit_scale else None
    out = gp.sdpa_causal(q, k, v, scale=scale)
    used = 0.7 if explicit_scale else 1 / math.sqrt(q.shape[-1])
    ref = ref_sdpa(q.to_numpy(), k.to_numpy(), v.to_numpy(), used)
    assert_allclose(out, ref, q.dtype, op_kind="reduction")


def test_sdpa_default_scale_is_inverse_sqrt_head_dim() -> None:
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 5, 4)) for _ in range(3))
    out = gp.sdpa_causal(*(gp.asarray(a) for a in (q, k, v)))
    assert_allclose(out, ref_sdpa(q, k, v, 0.5), gp.float64)
    with pytest.raises(AssertionError):  # a different scale gives a different answer
        assert_allclose(out, ref_sdpa(q, k, v, 1.0), gp.float64)


def test_sdpa_is_causal_future_keys_do_not_matter() -> None:
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((3, 6, 4)).astype(np.float32) for _ in range(3))
    base = gp.sdpa_causal(*(gp.asarray(a) for a in (q, k, v))).to_numpy()
    k2, v2 = k.copy(), v.copy()
    k2[:, 4:] = 50.0  # change only positions 4 and 5
    v2[:, 4:] = -50.0
    changed = gp.sdpa_causal(*(gp.asarray(a) for a in (q, k2, v2))).to_numpy()
    np.testing.assert_array_equal(changed[:, :4], base[:, :4])
    assert not np.allclose(changed[:, 4:], base[:, 4:])
    # the first query sees only the first key, so it returns the first value
    np.testing.assert_allclose(base[:, 0], v[:, 0], rtol=1e-6)


def test_sdpa_decode_step_sees_the_whole_cache() -> None:
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 1, 8))  # one new token
    k, v = rng.standard_normal((2, 7, 8)), rng.standard_normal((2, 7, 8))
    out = gp.sdpa_causal(gp.asarray(q), gp.asarray(k), gp.asarray(v)).to_numpy()
    s = np.einsum("hd,hkd->hk", q[:, 0], k) / math.sqrt(8)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    np.testing.assert_allclose(out[:, 0], np.einsum("hk,hkd->hd", w, v), rtol=1e-12)


def test_sdpa_gqa_maps_consecutive_query_heads_to_one_kv_head() -> None:
    rng = np.random.default_rng(3)
    q = rng.standard_normal((4, 3, 2))
    k = rng.standard_normal((2, 3, 2))
    v = rng.standard_normal((2, 3, 2))
    out = gp.sdpa_causal(gp.asarray(q), gp.asarray(k), gp.asarray(v)).to_numpy()
    for h, kv in enumerate([0, 0, 1, 1]):  # not [0, 1, 0, 1]
        alone = gp.sdpa_causal(*(gp.asarray(a[None]) for a in (q[h], k[kv], v[kv])))
        np.testing.assert_allclose(out[h], alone.to_numpy()[0], rtol=1e-12)


def test_sdpa_promotes_and_keeps_batch_dims() -> None:
    rng = np.random.default_rng(4)
    q = gp.asarray(rng.standard_normal((2, 3, 2, 4, 8)).astype(np.float16))
    k = gp.asarray(rng.standard_normal((2, 3, 1, 4, 8)).astype(np.float32))
    v = gp.asarray(rng.standard_normal((2, 3, 1, 4, 6)).astype(np.float32))
    out = gp.sdpa_causal(q, k, v)
    assert out.shape == (2, 3, 2, 4, 6)
    assert out.dtype == gp.float32


@pytest.mark.parametrize("dtype", [gp.float16, gp.bfloat16, gp.float32, gp.float64])
def test_sdpa_kernel_writes_every_element(dtype: gp.DataType) -> None:
    rng = np.random.default_rng(5)
    arrays = [rng.uniform(-1, 1, (4, 3, 5)).astype(dtype.to_numpy_dtype()) for _ in range(3)]
    q, k, v = (gp.asarray(a) for a in arrays)
    q, k, v = q[::2], k[1::2], v[1::2]  # strided views, 2 heads each
    out = poison(gp.empty((2, 3, 5), dtype=dtype))
    kernel_on("sdpa_causal", q.device, (dtype,) * 3)(q, k, v, out, 0.5)
    ref = ref_sdpa(q.to_numpy(), k.to_numpy(), v.to_numpy(), 0.5)
    assert_allclose(out, ref, dtype, op_kind="reduction")


def _qkv(*shapes: tuple[int, ...]) -> list[gp.GPUArray]:
    return [gp.ones(s) for s in shapes]


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((4, 8), (4, 8), (4, 8)), r"q must have shape \(\.\.\., heads, seq, head_dim\), got 2-D"),
        (((1, 2, 4, 8), (2, 4, 8), (2, 4, 8)), "same leading .batch. dimensions"),
        (((2, 2, 4, 8), (3, 2, 4, 8), (3, 2, 4, 8)), "same leading .batch. dimensions"),
        (((2, 4, 8), (2, 4, 8), (2, 5, 8)), "k and v must have the same kv_heads and kv_seq"),
        (((2, 4, 8), (2, 4, 6), (2, 4, 8)), "same head_dim, got 8 and 6"),
        (((3, 4, 8), (2, 4, 8), (2, 4, 8)), "3 heads, which must be a multiple of k/v's 2"),
        (((2, 5, 8), (2, 4, 8), (2, 4, 8)), "k/v have 4 positions but q has 5"),
        (((2, 4, 0), (2, 4, 0), (2, 4, 3)), "head_dim must be at least 1"),
    ],
)
def test_sdpa_shape_errors(shapes: Any, message: str) -> None:
    q, k, v = _qkv(*shapes)
    with pytest.raises(ValueError, match=message):
        gp.sdpa_causal(q, k, v)


def test_sdpa_type_errors() -> None:
    q, k, v = _qkv((2, 4, 8), (2, 4, 8), (2, 4, 8))
    with pytest.raises(TypeError, match="k has dtype int32"):
        gp.sdpa_causal(q, k.astype(gp.int32), v)
    with pytest.raises(TypeError, match="v must be a GPUArray, got ndarray"):
        gp.sdpa_causal(q, k, np.ones((2, 4, 8)))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="scale must be a float or None, got str"):
        gp.sdpa_causal(q, k, v, scale="auto")  # type: ignore[arg-type]
