"""Views against NumPy: reshape (view when strides allow, copy otherwise), transposes,
squeeze/expand_dims, broadcast_to, views of views and their offsets."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

FAST = settings(max_examples=60, deadline=None)


@st.composite
def mirrored(draw: st.DrawFn, dtype: Any = np.float32, max_dims: int = 3) -> tuple[Any, ...]:
    """(GPU parent, GPU view, host parent, host view): the view sliced with random steps
    (negative included) and maybe permuted; the parent holds distinct values."""
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=max_dims)))
    host = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)
    parent = gp.asarray(host)
    key = []
    for n in shape:
        step = draw(st.sampled_from([1, 1, 2, -1, -2, 3]))
        start = draw(st.none() | st.integers(-n - 1, n + 1))
        stop = draw(st.none() | st.integers(-n - 1, n + 1))
        key.append(slice(start, stop, step))
    g, h = parent[tuple(key)], host[tuple(key)] if key else host[...]
    permute: bool = draw(st.booleans())
    if shape and permute:
        perm = tuple(draw(st.permutations(list(range(len(shape))))))
        g, h = g.transpose(perm), h.transpose(perm)
    return parent, g, host, h


def byte_offset(view: np.ndarray, parent: np.ndarray) -> int:
    """Where `view` starts in `parent`'s memory, in bytes."""
    return int(view.__array_interface__["data"][0] - parent.__array_interface__["data"][0])


def _same_layout(g: gp.GPUArray, h: np.ndarray, parent: np.ndarray) -> None:
    assert g.shape == h.shape
    np.testing.assert_array_equal(g.to_numpy(), h)
    if h.size > 1:  # a stride of an axis of length 1 is never used
        assert [s for s, n in zip(g.strides, h.shape, strict=True) if n > 1] == [
            s for s, n in zip(h.strides, h.shape, strict=True) if n > 1
        ]
    if h.size:
        assert g.offset == byte_offset(h, parent)


def _targets(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Shapes of the same size: flattened, a leading/trailing 1, adjacent dims merged/split."""
    size = int(np.prod(shape))
    out = [(-1,), (1, *shape), (*shape, 1), (size,)]
    for i in range(len(shape) - 1):
        out.append((*shape[:i], shape[i] * shape[i + 1], *shape[i + 2 :]))
    for i, n in enumerate(shape):
        if n and n % 2 == 0:
            out.append((*shape[:i], 2, n // 2, *shape[i + 1 :]))
    return out


@FAST
@given(mirrored(), st.data())
def test_reshape_is_a_view_exactly_when_numpy_can_make_one(m: Any, data: Any) -> None:
    parent, g, host, h = m
    target = data.draw(st.sampled_from(_targets(h.shape)))
    r, hr = g.reshape(target), h.reshape(target)
    np.testing.assert_array_equal(r.to_numpy(), hr)
    numpy_view = hr.size > 1 and np.shares_memory(hr, host)
    if hr.size <= 1:
        return
    assert (r.buffer is parent.buffer) == numpy_view, f"{g.strides} -> {target}"
    # writing through the result reaches the parent only when it is a view
    r[...] = -7
    if numpy_view:
        assert np.all(g.to_numpy() == -7)
        assert int((parent.to_numpy() == -7).sum()) == h.size
    else:
        np.testing.assert_array_equal(parent.to_numpy(), host)
        with pytest.raises(ValueError, match="without a copy"):
            g.reshape(target, copy=False)


@FAST
@given(mirrored())
def test_reshape_copy_true_never_shares(m: Any) -> None:
    parent, g, _host, h = m
    r = gp.reshape(g, (-1,), copy=True)
    assert r.buffer is not parent.buffer
    np.testing.assert_array_equal(r.to_numpy(), h.reshape(-1))


def test_reshape_errors() -> None:
    x = gp.asarray(np.arange(6.0))
    with pytest.raises(ValueError, match=r"size 6 into shape \(4, 2\)"):
        x.reshape((4, 2))
    with pytest.raises(ValueError):
        x.reshape((-1, -1))


@FAST
@given(mirrored(), st.data())
def test_transpose_permute_and_mT_are_views(m: Any, data: Any) -> None:
    parent, g, host, h = m
    perm = tuple(data.draw(st.permutations(range(h.ndim))))
    _same_layout(g.transpose(perm), h.transpose(perm), host)
    _same_layout(g.permute(perm), h.transpose(perm), host)
    _same_layout(gp.permute_dims(g, perm), h.transpose(perm), host)
    if h.ndim == 2:
        _same_layout(g.T, h.T, host)
    if h.ndim >= 2:
        _same_layout(g.mT, np.swapaxes(h, -1, -2), host)
    assert g.transpose(perm).buffer is parent.buffer


def test_transpose_writes_reach_the_parent() -> None:
    host = np.arange(6.0).reshape(2, 3)
    x = gp.asarray(host)
    x.T[2, 0] = 100.0
    host.T[2, 0] = 100.0
    np.testing.assert_array_equal(x.to_numpy(), host)
    with pytest.raises(ValueError):
        gp.permute_dims(x, (0, 0))
    with pytest.raises(ValueError, match="at least 2"):
        gp.matrix_transpose(gp.asarray(np.ones(3)))


@FAST
@given(mirrored(), st.data())
def test_expand_dims_and_squeeze(m: Any, data: Any) -> None:
    parent, g, _host, h = m
    axis = data.draw(st.integers(-h.ndim - 1, h.ndim))
    e, he = g.expand_dims(axis), np.expand_dims(h, axis)
    np.testing.assert_array_equal(e.to_numpy(), he)
    assert e.shape == he.shape and e.buffer is parent.buffer
    back = gp.squeeze(e, axis)
    assert back.shape == h.shape
    np.testing.assert_array_equal(back.to_numpy(), h)
    ones = tuple(i for i, n in enumerate(e.shape) if n == 1)
    assert e.squeeze().shape == np.squeeze(he).shape
    assert gp.squeeze(e, ones).shape == np.squeeze(he, ones).shape
    others = [i for i, n in enumerate(e.shape) if n != 1]
    if others:
        with pytest.raises(ValueError, match=f"axis {others[0]}"):
            gp.squeeze(e, others[0])


@FAST
@given(mirrored(max_dims=2), st.data())
def test_broadcast_to_uses_zero_strides(m: Any, data: Any) -> None:
    parent, g, _host, h = m
    lead = data.draw(st.integers(1, 3))
    target = (lead, *((n if n != 1 else data.draw(st.sampled_from([1, 3]))) for n in h.shape))
    hb = np.broadcast_to(h, target)
    b = g.broadcast_to(target)
    np.testing.assert_array_equal(b.to_numpy(), hb)
    assert b.buffer is parent.buffer
    if hb.size:
        assert b.strides[0] == 0 or target[0] == 1
        for i, n in enumerate(h.shape):
            if n == 1 and target[i + 1] != 1:
                assert b.strides[i + 1] == 0


def test_broadcast_to_refuses_incompatible_shapes() -> None:
    x = gp.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError):
        x.broadcast_to((3, 3))
    with pytest.raises(ValueError):
        x.broadcast_to((3,))


@FAST
@given(mirrored())
def test_views_of_views_match_numpy(m: Any) -> None:
    _parent, g, host, h = m
    key = tuple(slice(None, None, -1) if i % 2 else slice(1, None) for i in range(h.ndim))
    v, hv = g[key], (h[key] if key else h[...])
    _same_layout(v, hv, host)
    if hv.ndim:
        v2, hv2 = v[..., ::2], hv[..., ::2]
        _same_layout(v2, hv2, host)
        _same_layout(v2.expand_dims(0).mT, np.swapaxes(np.expand_dims(hv2, 0), -1, -2), host)


def test_offsets_of_nested_slices() -> None:
    host = np.arange(60, dtype=np.int16).reshape(3, 4, 5)
    x = gp.asarray(host)
    v = x[1][2:][:, 1::2]
    hv = host[1][2:][:, 1::2]
    assert v.offset == byte_offset(hv, host) == (20 + 10 + 1) * 2
    assert v.strides == hv.strides == (10, 4)
    v[...] = 0
    hv[...] = 0
    np.testing.assert_array_equal(x.to_numpy(), host)
