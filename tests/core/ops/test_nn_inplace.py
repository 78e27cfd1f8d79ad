"""rope_inplace and bias_add_inplace: they write into the given memory, views included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit.testing import assert_allclose, views

FLOAT = st.sampled_from([gp.float16, gp.bfloat16, gp.float32, gp.float64])
EXAMPLES = settings(max_examples=50, deadline=None)
# everything but "broadcast": an in-place target needs one memory slot per element
WRITABLE = ("contiguous", "transposed", "reversed", "stepped", "offset", "expanded")


@pytest.fixture(autouse=True)
def on_cpu() -> Iterator[None]:
    """These tests check the CPU kernels: new arrays stay on the CPU even beside a GPU."""
    with gp.config.use(device="cpu"):
        yield


def tables(seq: int, head_dim: int, dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """The usual RoPE tables: angle pos / 10000**(2i / head_dim) for i < head_dim / 2."""
    inv_freq = 10000.0 ** (-np.arange(0, head_dim, 2) / head_dim)
    angles = np.outer(np.arange(seq), inv_freq)
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def ref_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Pair element i with i + D/2 (NeoX half split), element by element."""
    x = x.astype(np.float64)
    out = x.copy()
    half = x.shape[-1] // 2
    for idx in np.ndindex(*x.shape[:-1]):
        s = idx[-2]  # (..., seq, heads)
        for i in range(half):
            c, n = float(cos[s, i]), float(sin[s, i])
            a, b = x[(*idx, i)], x[(*idx, i + half)]
            out[(*idx, i)] = a * c - b * n
            out[(*idx, i + half)] = b * c + a * n
    return out


# -- rope_inplace ----------------------------------------------------------------------
@st.composite
def rope_inputs(draw: st.DrawFn) -> tuple[gp.GPUArray, ...]:
    batch = draw(st.lists(st.integers(1, 2), max_size=1).map(tuple))
    seq = draw(st.integers(0, 4))
    half = draw(st.integers(0, 3))
    hq, hk = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    q = draw(views(FLOAT, st.just((*batch, seq, hq, 2 * half)), kinds=WRITABLE))
    k = draw(views(FLOAT, st.just((*batch, seq, hk, 2 * half)), kinds=WRITABLE))
    cos = draw(views(FLOAT, st.just((seq, half)), (-1.0, 1.0)))
    sin = draw(views(FLOAT, st.just((seq, half)), (-1.0, 1.0)))
    return q, k, cos, sin


@EXAMPLES
@given(inputs=rope_inputs())
def test_rope_inplace_matches_reference(inputs: tuple[gp.GPUArray, ...]) -> None:
    q, k, cos, sin = inputs
    before_q, before_k = q.to_numpy(), k.to_numpy()
    c, s = cos.to_numpy().astype(np.float64), sin.to_numpy().astype(np.float64)
    assert gp.rope_inplace(q, k, cos, sin) is None
    # halves are rounded to q's dtype after computing in float32: one rounding of error
    assert_allclose(q, ref_rope(before_q, c, s), q.dtype, op_kind="transcendental")
    assert_allclose(k, ref_rope(before_k, c, s), k.dtype, op_kind="transcendental")


def test_rope_writes_into_a_fused_qkv_buffer() -> None:
    rng = np.random.default_rng(0)
    seq, heads, dim = 5, 2, 8
    host = rng.standard_normal((seq, 3, heads, dim)).astype(np.float32)
    qkv = gp.asarray(host)
    q, k = qkv[:, 0], qkv[:, 1]  # strided views into one buffer
    cos, sin = tables(seq, dim)
    gp.rope_inplace(q, k, gp.asarray(cos), gp.asarray(sin))
    after = qkv.to_numpy()
    np.testing.assert_allclose(after[:, 0], ref_rope(host[:, 0], cos, sin), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(after[:, 1], ref_rope(host[:, 1], cos, sin), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(after[:, 2], host[:, 2])  # v is not touched


def test_rope_position_zero_is_identity_and_rotations_undo() -> None:
    rng = np.random.default_rng(1)
    seq, dim = 6, 4
    host_q = rng.standard_normal((seq, 3, dim))
    host_k = rng.standard_normal((seq, 1, dim))
    q, k = gp.asarray(host_q), gp.asarray(host_k)
    cos, sin = tables(seq, dim, np.float64)
    gp.rope_inplace(q, k, gp.asarray(cos), gp.asarray(sin))
    got = q.to_numpy()
    np.testing.assert_array_equal(got[0], host_q[0])
    assert not np.allclose(got[1:], host_q[1:])
    # a rotation keeps each pair's length; rotating by -angle restores the input
    norms = np.hypot(got[..., :2], got[..., 2:])
    np.testing.assert_allclose(norms, np.hypot(host_q[..., :2], host_q[..., 2:]), rtol=1e-12)
    gp.rope_inplace(q, k, gp.asarray(cos), gp.asarray(-sin))
    np.testing.assert_allclose(q.to_numpy(), host_q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k.to_numpy(), host_k, rtol=1e-12, atol=1e-12)


def test_rope_pairs_halves_not_neighbours() -> None:
    # a 90-degree rotation at position 0: (x1, x2) -> (-x2, x1) on the half split
    q = gp.asarray(np.array([[[1.0, 2.0, 3.0, 4.0]]]))
    k = gp.asarray(np.zeros((1, 1, 4)))
    gp.rope_inplace(q, k, gp.zeros((1, 2), dtype=gp.float64), gp.ones((1, 2), dtype=gp.float64))
    np.testing.assert_array_equal(q.to_numpy()[0, 0], [-3.0, -4.0, 1.0, 2.0])


def test_rope_tables_may_share_the_buffer_of_q() -> None:
    rng = np.random.default_rng(2)
    host = rng.standard_normal((2, 1, 4))
    block = gp.asarray(np.concatenate([host.reshape(-1), [0.6, 0.8, 0.8, 0.6]]))
    q = block[:8].reshape((2, 1, 4))
    cos = block[8:12].reshape((2, 2))
    k = gp.asarray(np.ones((2, 1, 4)))
    sin_host = np.array([[0.8, 0.6], [0.6, 0.8]])
    gp.rope_inplace(q, k, cos, gp.asarray(sin_host))
    ref = ref_rope(host, np.array([[0.6, 0.8], [0.8, 0.6]]), sin_host)
    np.testing.assert_allclose(q.to_numpy(), ref, rtol=1e-12)
    np.testing.assert_array_equal(block.to_numpy()[8:], [0.6, 0.8, 0.8, 0.6])


def test_rope_errors() -> None:
    q, k = gp.ones((4, 2, 8)), gp.ones((4, 1, 8))
    cos, sin = gp.ones((4, 4)), gp.ones((4, 4))
    with pytest.raises(ValueError, match="head_dim must be even"):
        gp.rope_inplace(gp.ones((4, 2, 7)), gp.ones((4, 1, 7)), cos, sin)
    with pytest.raises(ValueError, match=r"sin has shape \(4, 8\) but must be .* \(4, 4\)"):
        gp.rope_inplace(q, k, cos, gp.ones((4, 8)))
    with pytest.raises(ValueError, match=r"cos has shape \(3, 4\)"):
        gp.rope_inplace(q, k, gp.ones((3, 4)), sin)
    with pytest.raises(ValueError, match="must agree on seq"):
        gp.rope_inplace(q, gp.ones((5, 1, 8)), cos, sin)
    with pytest.raises(ValueError, match=r"q must have shape \(seq, heads, head_dim\), got 2-D"):
        gp.rope_inplace(gp.ones((4, 8)), k, cos, sin)
    with pytest.raises(ValueError, match="q and k are the same array"):
        gp.rope_inplace(q, q, cos, sin)
    with pytest.raises(ValueError, match=r"k is a broadcast view \(stride 0 on axis 1\)"):
        gp.rope_inplace(q, gp.ones((4, 1, 8)).broadcast_to((4, 3, 8)), cos, sin)
    with pytest.raises(TypeError, match="q has dtype int64"):
        gp.rope_inplace(q.astype(gp.int64), k, cos, sin)
    with pytest.raises(TypeError, match="sin must be a GPUArray, got ndarray"):
        gp.rope_inplace(q, k, cos, np.ones((4, 4)))  # type: ignore[arg-type]
    np.testing.assert_array_equal(q.to_numpy(), 1.0)  # nothing ran


# -- bias_add_inplace ------------------------------------------------------------------
NUMERIC = st.sampled_from([gp.float16, gp.bfloat16, gp.float32, gp.float64, gp.int8,
                           gp.int32, gp.int64, gp.uint8])  # fmt: skip


@EXAMPLES
@given(data=st.data(), dtype=NUMERIC, shape=st.lists(st.integers(0, 4), min_size=1, max_size=3))
def test_bias_add_inplace_matches_numpy(
    data: st.DataObject, dtype: gp.DataType, shape: list[int]
) -> None:
    x = data.draw(views(dtype, st.just(tuple(shape)), kinds=WRITABLE))
    bias = data.draw(views(dtype, st.just((shape[-1],))))  # broadcast bias is fine
    before = x.to_numpy()
    expected = before.astype(np.float64) + bias.to_numpy().astype(np.float64)
    assert gp.bias_add_inplace(x, bias) is None
    if dtype.is_integer:
        expected = (before + bias.to_numpy()).astype(before.dtype)  # wraps like x += bias
    assert_allclose(x, expected, dtype)


def test_bias_add_changes_only_the_viewed_elements() -> None:
    base = gp.asarray(np.arange(24, dtype=np.float32).reshape(4, 6))
    view = base[1:3, ::-2]  # rows 1-2, columns 5, 3, 1
    gp.bias_add_inplace(view, gp.asarray(np.array([100.0, 200.0, 300.0], dtype=np.float32)))
    want = np.arange(24, dtype=np.float32).reshape(4, 6)
    want[1:3, 5] += 100
    want[1:3, 3] += 200
    want[1:3, 1] += 300
    np.testing.assert_array_equal(base.to_numpy(), want)


def test_bias_add_with_bias_inside_x() -> None:
    x = gp.asarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    gp.bias_add_inplace(x, x[0])  # row 0 doubles, then row 1 must add the *old* row 0
    np.testing.assert_array_equal(x.to_numpy(), [[0, 2, 4], [3, 5, 7]])


def test_bias_add_promotes_bias_into_x_dtype() -> None:
    x = gp.asarray(np.ones((2, 3), dtype=np.float32))
    gp.bias_add_inplace(x, gp.asarray(np.array([1, 2, 3], dtype=np.float16)))
    np.testing.assert_array_equal(x.to_numpy(), [[2, 3, 4], [2, 3, 4]])


def test_bias_add_errors() -> None:
    x = gp.ones((2, 3))
    with pytest.raises(TypeError, match="adding a float64 bias would change x's dtype float32"):
        gp.bias_add_inplace(x, gp.ones((3,), dtype=gp.float64))
    with pytest.raises(TypeError, match="float32 bias would change x's dtype int32"):
        gp.bias_add_inplace(gp.ones((2, 3), dtype=gp.int32), gp.ones((3,)))
    with pytest.raises(ValueError, match=r"bias has shape \(2,\) but must have shape \(3,\)"):
        gp.bias_add_inplace(x, gp.ones((2,)))
    with pytest.raises(ValueError, match=r"bias has shape \(1, 3\)"):
        gp.bias_add_inplace(x, gp.ones((1, 3)))
    with pytest.raises(ValueError, match="x is a broadcast view"):
        gp.bias_add_inplace(gp.ones((3,)).broadcast_to((2, 3)), gp.ones((3,)))
    with pytest.raises(TypeError, match="x has dtype bool"):
        gp.bias_add_inplace(gp.asarray([True]), gp.asarray([False]))
    with pytest.raises(TypeError, match="x must be a GPUArray, got list"):
        gp.bias_add_inplace([1.0, 2.0, 3.0], gp.ones((3,)))  # type: ignore[arg-type]
    np.testing.assert_array_equal(x.to_numpy(), 1.0)
