"""Basic indexing vs NumPy: ints, slices (steps, negative, empty), '...', None, their
combinations, errors naming the axis and size, and assignment through the views."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

FAST = settings(max_examples=80, deadline=None)


@st.composite
def arrays_and_keys(draw: st.DrawFn) -> tuple[np.ndarray, tuple[Any, ...]]:
    """A host array with distinct values and a valid basic index for it."""
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=3)))
    host = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    items: list[Any] = []
    use_ellipsis = draw(st.booleans())
    n_axes = draw(st.integers(0, len(shape)))
    for n in shape[:n_axes]:
        kind = draw(st.sampled_from(["int", "slice", "slice", "none"]))
        if kind == "none":
            items.append(None)
        if kind == "int" and n:
            items.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.none() | st.integers(-n - 2, n + 2))
            stop = draw(st.none() | st.integers(-n - 2, n + 2))
            step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2]))
            items.append(slice(start, stop, step))
    if use_ellipsis:  # it stands for the axes not indexed: after the items, or anywhere
        where = draw(st.integers(0, len(items))) if n_axes == len(shape) else len(items)
        items.insert(where, Ellipsis)
    if draw(st.booleans()):
        items.append(None)
    return host, tuple(items)


def _offset(view: np.ndarray, base: np.ndarray) -> int:
    return int(view.__array_interface__["data"][0] - base.__array_interface__["data"][0])


@FAST
@given(arrays_and_keys())
def test_basic_keys_give_numpy_views(case: tuple[np.ndarray, tuple[Any, ...]]) -> None:
    host, key = case
    x = gp.asarray(host)
    got, want = x[key], np.asarray(host[key])
    assert got.shape == want.shape, key
    np.testing.assert_array_equal(got.to_numpy(), want)
    assert got.buffer is x.buffer, "basic indexing must not copy"
    if want.size:  # with an ellipsis NumPy returns a 0-d view, not a scalar copy
        view = host[key if any(k is Ellipsis for k in key) else (*key, Ellipsis)]
        assert got.offset == _offset(view, host)


@FAST
@given(arrays_and_keys(), st.integers(-50, 50))
def test_scalar_assignment_through_views(case: tuple[np.ndarray, Any], value: int) -> None:
    host, key = case
    x = gp.asarray(host)
    x[key] = value
    want = host.copy()
    want[key] = value
    np.testing.assert_array_equal(x.to_numpy(), want)


@FAST
@given(arrays_and_keys(), st.data())
def test_broadcast_array_assignment(case: tuple[np.ndarray, Any], data: Any) -> None:
    host, key = case
    target_shape = np.asarray(host[key]).shape
    # a value shaped like the target's trailing dims, some dropped to 1
    tail = target_shape[data.draw(st.integers(0, len(target_shape))) :]
    shape = tuple(data.draw(st.sampled_from([n, 1])) for n in tail)
    value = -np.arange(1, int(np.prod(shape)) + 1, dtype=np.int32).reshape(shape)
    x = gp.asarray(host)
    x[key] = gp.asarray(value)
    want = host.copy()
    want[key] = value
    np.testing.assert_array_equal(x.to_numpy(), want)


def test_assignment_of_a_mismatched_shape_is_refused() -> None:
    x = gp.zeros((3, 4), dtype="int32")
    with pytest.raises(ValueError, match="shape"):
        x[:, 1:] = gp.ones((2,), dtype="int32")
    np.testing.assert_array_equal(x.to_numpy(), np.zeros((3, 4)))


@pytest.mark.parametrize(
    ("key", "axis", "size"),
    [(5, 0, 3), (-4, 0, 3), ((0, 4), 1, 4), ((Ellipsis, -6), 2, 5), ((None, 1, 7), 1, 4)],
)
def test_out_of_range_ints_name_the_axis_and_size(key: Any, axis: int, size: int) -> None:
    x = gp.zeros((3, 4, 5))
    with pytest.raises(IndexError, match=rf"axis {axis} with size {size}"):
        x[key]
    with pytest.raises(IndexError, match=rf"axis {axis} with size {size}"):
        x[key] = 1.0


def test_too_many_indices_and_bad_items() -> None:
    x = gp.zeros((2, 3))
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="too many indices"):
        x[..., 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(IndexError):
        x["a"]
    with pytest.raises(IndexError):
        x[1.5]
    with pytest.raises(ValueError):
        x[::0]


def test_zero_d_indexing() -> None:
    x = gp.asarray(np.float32(3.5))
    assert x[()].shape == () and x[()].item() == 3.5
    assert x[...].shape == ()
    assert x[None].shape == (1,)
    x[...] = 1.0
    assert x.item() == 1.0
    with pytest.raises(IndexError, match="too many indices"):
        x[0]


def test_views_share_writes_both_ways() -> None:
    host = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    x = gp.asarray(host)
    v = x[1, ::-1, 1::2]
    v[...] = 0
    host[1, ::-1, 1::2] = 0
    np.testing.assert_array_equal(x.to_numpy(), host)
    x[1] = 9
    host[1] = 9
    np.testing.assert_array_equal(v.to_numpy(), host[1, ::-1, 1::2])
