"""take, take_along_axis and advanced x[...] / x[...] = v against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from array_layouts import LAYOUTS, host_data, make
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit import _dtypes as dt
from pygpukit._ops._core import kernel_on

FAST = settings(max_examples=50, deadline=None)
INDEX_DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8)


def same(got: gp.GPUArray | np.ndarray, want: np.ndarray) -> None:
    """Exact equality of dtype, shape and bits."""
    host = got.to_numpy() if isinstance(got, gp.GPUArray) else got
    assert host.dtype == want.dtype, (host.dtype, want.dtype)
    assert host.shape == want.shape, (host.shape, want.shape)
    kind = f"u{want.dtype.itemsize}"
    assert np.array_equal(host.view(kind), np.array(want, order="C").view(kind))


@st.composite
def arrays(draw: Any, min_dims: int = 1, max_dims: int = 3) -> tuple[gp.GPUArray, np.ndarray]:
    dtype = draw(st.sampled_from(dt.ALL_DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=min_dims, max_size=max_dims)))
    a = host_data(dtype, shape, draw(st.integers(0, 2**31)))
    return make(a, draw(st.sampled_from(LAYOUTS))), a


def index_array(draw: Any, n: int, shape: tuple[int, ...]) -> np.ndarray:
    """Random valid indices into an axis of length n (negative ones included)."""
    if n == 0:
        return np.zeros((0,) * max(len(shape), 1), np.int64)
    np_dtype = draw(st.sampled_from(INDEX_DTYPES))
    low = 0 if np_dtype == np.uint8 else -n
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return rng.integers(low, n, shape).astype(np_dtype)


# -- take ---------------------------------------------------------------------------------


@FAST
@given(arrays(), st.data())
def test_take_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    ishape = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    idx = index_array(data.draw, a.shape[axis], ishape)
    same(gp.take(x, gp.from_numpy(idx), axis=axis), np.take(a, idx, axis=axis))
    if a.ndim == 1:
        same(gp.take(x, gp.from_numpy(idx)), np.take(a, idx))


def test_take_errors() -> None:
    x = gp.asarray(np.arange(6).reshape(2, 3))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        gp.take(x, gp.asarray([0, 3]), axis=1)
    with pytest.raises(IndexError, match="index -3 is out of bounds for axis 0 with size 2"):
        gp.take(x, gp.asarray([-3]), axis=0)
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        gp.take(gp.zeros((0,)), gp.asarray([0]))
    with pytest.raises(ValueError, match="axis is required for a 2-D array"):
        gp.take(x, gp.asarray([0]))
    with pytest.raises(TypeError, match="indices must have an integer dtype, got float32"):
        gp.take(x, gp.asarray([0.0]), axis=0)
    with pytest.raises(TypeError, match="indices must be a GPUArray"):
        gp.take(x, [0], axis=0)  # type: ignore[arg-type]


@FAST
@given(arrays(), st.data())
def test_take_along_axis_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    ishape = [data.draw(st.sampled_from([n, 1])) for n in a.shape]
    ishape[axis] = data.draw(st.integers(0, 3))
    idx = index_array(data.draw, a.shape[axis], tuple(ishape))
    if a.shape[axis] == 0:
        ishape[axis] = 0  # nothing can be taken from an empty axis
        idx = np.zeros(tuple(ishape), np.int64)
    # NumPy broadcasts the other axes of x and indices against each other too
    want = np.take_along_axis(a, idx, axis=axis)
    same(gp.take_along_axis(x, gp.from_numpy(idx), axis=axis), want)


def test_take_along_axis_errors() -> None:
    x = gp.asarray(np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="same number of dimensions"):
        gp.take_along_axis(x, gp.asarray([0]), axis=1)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1 with size 3"):
        gp.take_along_axis(x, gp.asarray([[0], [5]]), axis=1)
    with pytest.raises(ValueError, match="do not broadcast outside axis 1"):
        gp.take_along_axis(x, gp.asarray(np.zeros((3, 1), np.int64)), axis=1)


# -- advanced __getitem__ ----------------------------------------------------------------


@st.composite
def int_keys(draw: Any, shape: tuple[int, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A key of slices, ints and index arrays (at least one), for gp and for NumPy."""
    used = draw(st.integers(1, len(shape)))
    bshape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    gp_key: list[Any] = []
    np_key: list[Any] = []
    kinds = [draw(st.sampled_from(["array", "slice", "int"])) for _ in range(used)]
    if "array" not in kinds:
        kinds[draw(st.integers(0, used - 1))] = "array"
    ellipsis = draw(st.booleans()) and used < len(shape)  # then the key indexes the last axes
    for n, kind in zip(shape[len(shape) - used :] if ellipsis else shape, kinds, strict=False):
        if kind == "array" or (kind == "int" and n == 0):
            idx = index_array(draw, n, draw(st.sampled_from([bshape, bshape[1:]])))
            if n == 0:
                idx = np.zeros((0,), np.int64)
            gp_key.append(gp.from_numpy(idx))
            np_key.append(idx)
        elif kind == "slice":
            sl = slice(draw(st.integers(-4, 4)), draw(st.integers(-4, 4)),
                       draw(st.sampled_from([1, 2, -1, -2])))  # fmt: skip
            gp_key.append(sl)
            np_key.append(sl)
        else:
            i = draw(st.integers(-n, n - 1))
            gp_key.append(i)
            np_key.append(i)
    if ellipsis:
        gp_key.insert(0, Ellipsis)
        np_key.insert(0, Ellipsis)
    return tuple(gp_key), tuple(np_key)


def _numpy_or_error(a: np.ndarray, key: tuple[Any, ...]) -> np.ndarray | None:
    try:
        return a[key]
    except IndexError:  # e.g. empty index arrays that do not broadcast
        return None


@FAST
@given(arrays(), st.data())
def test_getitem_with_index_arrays_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    gp_key, np_key = data.draw(int_keys(a.shape))
    want = _numpy_or_error(a, np_key)
    if want is None:
        with pytest.raises((IndexError, ValueError)):
            x[gp_key]
        return
    same(x[gp_key], want)


@FAST
@given(arrays(max_dims=4), st.data())
def test_getitem_with_a_mask_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    k = data.draw(st.integers(0, a.ndim))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    mask = np.asarray(rng.random(a.shape[:k]) < 0.5)
    same(x[gp.from_numpy(mask)], a[mask])
    if k < a.ndim:
        rest = (slice(None, None, -1), 0)[: a.ndim - k] if a.shape[k] else (slice(None),)
        rest = rest if all(n for n in a.shape[k : k + len(rest)]) else (slice(None),)
        same(x[(gp.from_numpy(mask), *rest)], a[(mask, *rest)])


@FAST
@given(arrays(max_dims=4), st.data())
def test_mask_after_slices_or_ellipsis_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    k = data.draw(st.integers(0, a.ndim))
    pos = data.draw(st.integers(0, a.ndim - k))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    mask = np.asarray(rng.random(a.shape[pos : pos + k]) < 0.5)
    if data.draw(st.booleans()) and pos + k == a.ndim:
        key: tuple[Any, ...] = (Ellipsis, mask)
    else:
        steps = [data.draw(st.sampled_from([1, -1, 2])) for _ in range(pos)]
        key = (*(slice(None, None, s) for s in steps), mask)
    gp_key = tuple(gp.from_numpy(it) if isinstance(it, np.ndarray) else it for it in key)
    want = a[key]
    same(x[gp_key], want)
    b = a.copy()
    value = host_data(x.dtype, want.shape[pos:] if data.draw(st.booleans()) else want.shape, 5)
    b[key] = value
    x[gp_key] = gp.from_numpy(value)
    same(x, b)


def test_getitem_host_indices_and_python_bools() -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = gp.from_numpy(a)
    same(x[[1, 0]], a[[1, 0]])
    same(x[np.array([[1], [-2]])], a[np.array([[1], [-2]])])
    same(x[:, [0, 2], [1, 3]], a[:, [0, 2], [1, 3]])
    same(x[[True, False]], a[[True, False]])
    same(x[True], a[True])
    same(x[False], a[False])
    same(x[[]], a[np.array([], np.int64)])


def test_getitem_index_dims_go_first_when_not_adjacent() -> None:
    a = np.arange(60, dtype=np.int16).reshape(3, 4, 5)
    x = gp.from_numpy(a)
    key = ([0, 2], slice(None), [1, 4])
    assert x[key].shape == (2, 4)
    same(x[key], a[key])
    same(x[0, :, [1, 2]], a[0, :, [1, 2]])  # an int counts as an index array here


def test_getitem_errors_name_the_problem() -> None:
    x = gp.asarray(np.arange(12).reshape(3, 4))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[gp.asarray([0, 3])]
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 1 with size 4"):
        x[:, [-5]]
    with pytest.raises(IndexError, match=r"boolean index of shape \(4,\) does not match"):
        x[gp.asarray([True, False, True, False])]
    with pytest.raises(IndexError, match="None"):
        x[None, [0]]
    with pytest.raises(IndexError, match="integer or boolean type, got float32"):
        x[gp.asarray([0.0])]
    with pytest.raises(IndexError, match="boolean index is only supported after slices"):
        x[0, gp.asarray([True, False, True, False])]
    with pytest.raises(IndexError, match=r"boolean index of shape \(3,\) does not match"):
        x[..., gp.asarray([True, False, True])]
    with pytest.raises(IndexError, match="too many indices"):
        x[[0], [0], [0]]
    with pytest.raises(IndexError, match="valid indices, got str"):
        x["a", [0]]
    with pytest.raises(ValueError, match="cannot be broadcast"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 1 with size 0"):
        gp.zeros((2, 0))[[], 0]  # a Python int is checked even if the arrays are empty


@pytest.mark.parametrize("dtype", [gp.float32, gp.int8, gp.bfloat16])
def test_gather_kernel_writes_every_element(dtype: dt.DataType) -> None:
    x = make(host_data(dtype, (3, 4, 5), 2), "strided")
    i0 = gp.asarray(np.array([[0, 2], [1, -1]]))
    i2 = gp.asarray(np.array([[4, 0], [3, 3]]))
    fill = 7 if dtype.is_integer else np.nan
    out = gp.from_numpy(np.full((2, 2, 4), fill).astype(dtype.to_numpy_dtype()))
    kernel_on("gather", x.device, (dtype, gp.int64, gp.int64))(x, [i0, i2], (0, 2), out)
    host = x.to_numpy()
    same(out, host[i0.to_numpy(), :, i2.to_numpy()])


# -- advanced __setitem__ ----------------------------------------------------------------


@FAST
@given(arrays(), st.data())
def test_setitem_with_index_arrays_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    gp_key, np_key = data.draw(int_keys(a.shape))
    want_shape = _numpy_or_error(a, np_key)
    if want_shape is None:
        return
    b = a.copy()
    use_scalar = data.draw(st.booleans())
    if use_scalar:
        value: Any = data.draw(st.sampled_from([0, 1, True])) if x.dtype.kind in "biu" else 0.5
        b[np_key] = value
        gp_value: Any = value
    else:
        # a value per selected element; repeated indices make the winner unspecified,
        # so write the same value to every element through that case
        v = host_data(x.dtype, want_shape.shape[1:], data.draw(st.integers(0, 99)))
        b[np_key] = v
        gp_value = gp.from_numpy(v)
        if not _unique(a.shape, np_key):
            return
    x[gp_key] = gp_value
    same(x, b)


def _unique(shape: tuple[int, ...], key: tuple[Any, ...]) -> bool:
    """Whether the key selects no element twice (so writes have one winner)."""
    flat = np.arange(int(np.prod(shape))).reshape(shape)
    picked = flat[key]
    return bool(np.unique(picked).size == picked.size)


@FAST
@given(arrays(max_dims=3), st.data())
def test_setitem_with_a_mask_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    k = data.draw(st.integers(1, a.ndim))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    mask = np.asarray(rng.random(a.shape[:k]) < 0.5)
    count = int(mask.sum())
    b = a.copy()
    kind = data.draw(st.sampled_from(["scalar", "rows", "row"]))
    if kind == "scalar":
        value: Any = 1 if x.dtype.kind in "biu" else -2.5
        b[mask] = value
        gp_value: Any = value
    else:
        shape = (count, *a.shape[k:]) if kind == "rows" else a.shape[k:]
        v = host_data(x.dtype, shape, 3)
        b[mask] = v
        gp_value = gp.from_numpy(v)
    x[gp.from_numpy(mask)] = gp_value
    same(x, b)


def test_setitem_casts_values_and_checks_scalars() -> None:
    x = gp.zeros((4,), dtype=gp.int8)
    x[gp.asarray([1, 3])] = gp.asarray([2.7, -1.2])
    same(x, np.array([0, 2, 0, -1], np.int8))
    with pytest.raises(OverflowError, match="out of range for int8"):
        x[[0]] = 300
    with pytest.raises(OverflowError, match="out of range for int8"):
        x[gp.asarray([True, False, False, False])] = 300


def test_setitem_errors_leave_the_array_untouched() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = gp.from_numpy(a)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 4"):
        x[[0, 1], [2, 7]] = 5.0
    with pytest.raises(ValueError, match=r"shape \(3,\) to an index of shape \(2,\)"):
        x[[0, 1], [2, 3]] = gp.zeros((3,))
    with pytest.raises(ValueError, match=r"shape \(3, 4\) to the 2 elements selected"):
        x[gp.asarray([True, False, True])] = gp.zeros((3, 4))
    with pytest.raises(ValueError, match=r"shape \(5,\) to an index of shape \('count', 4\)"):
        x[gp.asarray([True, False, True])] = gp.zeros((5,))
    same(x, a)


def test_setitem_through_a_view_writes_the_base() -> None:
    base = gp.zeros((3, 4), dtype=gp.int32)
    view = base[:, ::-2]  # columns 3 and 1
    view[[0, 2], [1, 0]] = gp.asarray(np.array([5, 6], np.int32))
    want = np.zeros((3, 4), np.int32)
    want[0, 1] = 5
    want[2, 3] = 6
    same(base, want)


@pytest.mark.parametrize("dtype", [gp.float64, gp.uint8, gp.float8_e4m3fn])
def test_take_kernels_write_every_element(dtype: dt.DataType) -> None:
    x = make(host_data(dtype, (3, 4), 4), "reversed")
    idx = gp.asarray(np.array([[3, -1, 0]], np.int16))
    out = gp.from_numpy(np.full((3, 1, 3), 9, np.float32).astype(dtype.to_numpy_dtype()))
    kernel_on("take", x.device, (dtype, gp.int16))(x, idx, out, 1)
    same(out, np.take(x.to_numpy(), idx.to_numpy(), axis=1))
    along = gp.asarray(np.array([[0, 2], [1, 1], [3, -4]], np.int32))
    out2 = gp.from_numpy(np.full((3, 2), 9, np.float32).astype(dtype.to_numpy_dtype()))
    kernel_on("take_along_axis", x.device, (dtype, gp.int32))(x, along, out2, 1)
    same(out2, np.take_along_axis(x.to_numpy(), along.to_numpy(), axis=1))


def test_mask_select_returns_a_new_pool_array() -> None:
    x = gp.asarray(np.arange(6, dtype=np.int64).reshape(2, 3))
    mask = gp.asarray(np.array([[True, False, True], [False, True, False]]))
    before = gp.memory.stats("cpu")["used"]
    picked = x[mask]
    same(picked, np.array([0, 2, 4], np.int64))
    assert picked.buffer is not x.buffer
    assert gp.memory.stats("cpu")["used"] >= before + picked.nbytes  # from the device pool
