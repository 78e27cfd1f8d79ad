"""Manipulation functions against NumPy: views share memory, data movers copy exactly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from array_layouts import LAYOUTS as BASE_LAYOUTS
from array_layouts import host_data
from array_layouts import make as make_layout
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit import _dtypes as dt
from pygpukit._ops._core import kernel_on

FAST = settings(max_examples=50, deadline=None)
LAYOUTS = (*BASE_LAYOUTS, "broadcast")


def make(data: np.ndarray, layout: str) -> tuple[gp.GPUArray, np.ndarray]:
    """A GPUArray with `data`'s values laid out as `layout`, and its expected values."""
    if layout == "broadcast" and data.ndim:
        row = np.array(order="C", object=data[:1])
        return gp.from_numpy(row).broadcast_to(data.shape), np.broadcast_to(row, data.shape)
    return make_layout(data, layout), data


def same(got: gp.GPUArray, want: np.ndarray) -> None:
    """Exact equality of dtype, shape and bits (NaNs and -0.0 included)."""
    host = got.to_numpy()
    assert host.dtype == want.dtype, (host.dtype, want.dtype)
    assert host.shape == want.shape, (host.shape, want.shape)
    kind = f"u{want.dtype.itemsize}"
    assert np.array_equal(host.view(kind), np.array(want, order="C").view(kind))


def shares_memory(view: gp.GPUArray, base: gp.GPUArray) -> bool:
    return view.buffer is base.buffer


@st.composite
def arrays(
    draw: Any,
    kinds: tuple[dt.DataType, ...] = dt.ALL_DTYPES,
    min_dims: int = 0,
    max_dims: int = 4,
    min_side: int = 0,
) -> tuple[gp.GPUArray, np.ndarray]:
    dtype = draw(st.sampled_from(kinds))
    shape = tuple(draw(st.lists(st.integers(min_side, 4), min_size=min_dims, max_size=max_dims)))
    layout = draw(st.sampled_from(LAYOUTS))
    return make(host_data(dtype, shape, draw(st.integers(0, 2**32 - 1))), layout)


# -- views ------------------------------------------------------------------------------


@FAST
@given(arrays(), st.data())
def test_broadcast_to_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    lead = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    target = (*lead, *(data.draw(st.sampled_from([n, n] if n != 1 else [1, 3])) for n in a.shape))
    got = gp.broadcast_to(x, target)
    same(got, np.broadcast_to(a, target))
    assert shares_memory(got, x)


def test_broadcast_to_error_names_shapes() -> None:
    x = gp.asarray(np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"\(3, 2\).*\(3, 3\)"):
        gp.broadcast_to(x, (3, 3))


@FAST
@given(arrays(max_dims=3), arrays(max_dims=3))
def test_broadcast_arrays_matches_numpy(xa: Any, ya: Any) -> None:
    (x, a), (y, b) = xa, ya
    try:
        want = np.broadcast_arrays(a, b)
    except ValueError:
        with pytest.raises(ValueError, match="cannot be broadcast"):
            gp.broadcast_arrays(x, y)
        return
    got = gp.broadcast_arrays(x, y)
    for g, w, src in zip(got, want, (x, y), strict=True):
        same(g, w)
        assert shares_memory(g, src)


@FAST
@given(arrays(), st.data())
def test_expand_dims_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    axis = data.draw(st.integers(-a.ndim - 1, a.ndim))
    got = gp.expand_dims(x, axis=axis)
    same(got, np.expand_dims(a, axis))
    assert shares_memory(got, x)


def test_expand_dims_bad_axis() -> None:
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        gp.expand_dims(gp.zeros((2,)), axis=3)


@FAST
@given(arrays(), st.data())
def test_squeeze_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    ones = [i for i, n in enumerate(a.shape) if n == 1]
    axes = tuple(data.draw(st.lists(st.sampled_from(ones), unique=True))) if ones else ()
    if a.ndim and not ones:
        with pytest.raises(ValueError, match="cannot squeeze axis 0"):
            gp.squeeze(x, 0)
    got = gp.squeeze(x, axes)
    same(got, np.squeeze(a, axes))
    assert shares_memory(got, x)


def test_squeeze_refuses_non_unit_axis() -> None:
    with pytest.raises(ValueError, match="cannot squeeze axis 1 of size 3"):
        gp.squeeze(gp.zeros((1, 3)), 1)


@FAST
@given(arrays(min_dims=1), st.data())
def test_permute_dims_transpose_moveaxis(xa: Any, data: Any) -> None:
    x, a = xa
    perm = tuple(data.draw(st.permutations(range(a.ndim))))
    same(gp.permute_dims(x, perm), np.transpose(a, perm))
    same(gp.transpose(x), np.transpose(a))
    same(gp.transpose(x, perm), np.transpose(a, perm))
    src = data.draw(st.integers(-a.ndim, a.ndim - 1))
    dst = data.draw(st.integers(-a.ndim, a.ndim - 1))
    got = gp.moveaxis(x, src, dst)
    same(got, np.moveaxis(a, src, dst))
    assert shares_memory(got, x)
    k = data.draw(st.integers(0, a.ndim))
    srcs = tuple(data.draw(st.permutations(range(a.ndim))))[:k]
    dsts = tuple(data.draw(st.permutations(range(a.ndim))))[:k]
    same(gp.moveaxis(x, srcs, dsts), np.moveaxis(a, srcs, dsts))


def test_permute_dims_errors() -> None:
    x = gp.zeros((2, 3, 4))
    with pytest.raises(ValueError, match="must name each of the 3 axes"):
        gp.permute_dims(x, (0, 1))
    with pytest.raises(ValueError, match="repeated axis"):
        gp.permute_dims(x, (0, 1, 1))
    with pytest.raises(ValueError, match="differ in length"):
        gp.moveaxis(x, (0, 1), (2,))


@FAST
@given(arrays(), st.data())
def test_flip_is_a_view_matching_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    axis: Any = None
    if a.ndim:
        axis = data.draw(
            st.one_of(
                st.none(),
                st.integers(-a.ndim, a.ndim - 1),
                st.lists(st.integers(0, a.ndim - 1), unique=True).map(tuple),
            )
        )
    got = gp.flip(x, axis=axis)
    same(got, np.flip(a, axis))
    assert shares_memory(got, x)


def test_flip_writes_through_to_the_base() -> None:
    base = gp.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    f = gp.flip(base, axis=1)
    f[0, 0] = 100  # the last element of row 0 in the base
    assert base.to_numpy()[0, 2] == 100
    assert gp.flip(gp.zeros((0, 3))).shape == (0, 3)


@FAST
@given(arrays(), st.data())
def test_reshape_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    # a random factorisation of the size into up to 3 dimensions, maybe with a -1
    size = a.size
    dims: list[int] = []
    rest = size
    for _ in range(data.draw(st.integers(0, 2))):
        d = data.draw(st.sampled_from([k for k in range(1, 5) if rest % k == 0] or [1]))
        dims.append(d)
        rest //= d if d else 1
    dims.append(rest)
    if size and data.draw(st.booleans()):
        dims[data.draw(st.integers(0, len(dims) - 1))] = -1
    shape = tuple(dims)
    same(gp.reshape(x, shape), a.reshape(shape))
    copied = gp.reshape(x, shape, copy=True)
    same(copied, a.reshape(shape))
    assert not shares_memory(copied, x)


def test_reshape_copy_semantics() -> None:
    base = gp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    v = gp.reshape(base, (4, 3), copy=False)
    v[0, 0] = -1.0
    assert base.to_numpy()[0, 0] == -1.0  # a view of the same memory
    with pytest.raises(ValueError, match=r"without a copy \(copy=False\)"):
        gp.reshape(base.T, (12,), copy=False)
    with pytest.raises(ValueError, match=r"cannot reshape array of size 12 into shape \(5, -1\)"):
        gp.reshape(base, (5, -1))


@FAST
@given(arrays(min_dims=1), st.data())
def test_unstack_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    got = gp.unstack(x, axis=axis)
    want = list(np.moveaxis(a, axis, 0))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        same(g, w)
        assert shares_memory(g, x)


def test_unstack_0d_refused() -> None:
    with pytest.raises(ValueError, match="0-d array"):
        gp.unstack(gp.zeros(()))


# -- data movers --------------------------------------------------------------------------

# concat promotes, so mixed dtypes come from the arithmetic types only
PROMOTABLE = tuple(d for d in dt.ALL_DTYPES if not d.is_float8)


@FAST
@given(st.data())
def test_concat_matches_numpy(data: Any) -> None:
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
    axis = data.draw(st.integers(-ndim, ndim - 1))
    mixed = data.draw(st.booleans())
    kinds = PROMOTABLE if mixed else (data.draw(st.sampled_from(dt.ALL_DTYPES)),)
    parts, hosts = [], []
    for _ in range(data.draw(st.integers(1, 3))):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        x, a = make(
            host_data(data.draw(st.sampled_from(kinds)), tuple(s), data.draw(st.integers(0, 999))),
            data.draw(st.sampled_from(LAYOUTS)),
        )
        parts.append(x)
        hosts.append(a)
    want_dtype = gp.result_type(*parts)
    np_dtype = want_dtype.to_numpy_dtype()
    got = gp.concat(parts, axis=axis)
    want = np.concatenate([h.astype(np_dtype) for h in hosts], axis)
    same(got, want)
    flat = gp.concat(tuple(parts), axis=None)
    same(flat, np.concatenate([h.reshape(-1).astype(np_dtype) for h in hosts]))


def test_concat_errors_name_the_problem() -> None:
    a = gp.zeros((2, 3))
    clash = r"arrays\[0\] has shape \(2, 3\) but arrays\[1\] has shape \(2, 4\)"
    with pytest.raises(ValueError, match=clash):
        gp.concat([a, gp.zeros((2, 4))], axis=0)
    with pytest.raises(ValueError, match="at least one array"):
        gp.concat([])
    with pytest.raises(ValueError, match="0-d arrays"):
        gp.concat([gp.zeros(()), gp.zeros(())])
    with pytest.raises(TypeError, match="list or tuple"):
        gp.concat(a)
    with pytest.raises(TypeError, match="storage type"):
        gp.concat([a.astype(gp.float8_e4m3fn), a])


@pytest.mark.parametrize("dtype", [gp.float32, gp.int16, gp.bfloat16, gp.bool])
def test_concat_kernel_writes_every_element(dtype: dt.DataType) -> None:
    xs = [make(host_data(dtype, (2, n), n), "contiguous")[0] for n in (1, 3, 2)]
    out = gp.from_numpy(np.full((2, 6), 7, dtype.to_numpy_dtype()))  # sentinel
    kernel_on("concat", out.device, (dtype,))(xs, out, 1)
    same(out, np.concatenate([x.to_numpy() for x in xs], 1))


@FAST
@given(arrays(min_dims=0, max_dims=3), st.integers(1, 3), st.data())
def test_stack_matches_numpy(xa: Any, n: int, data: Any) -> None:
    x, a = xa
    others = [make(host_data(x.dtype, a.shape, i + 7), "contiguous") for i in range(n - 1)]
    axis = data.draw(st.integers(-a.ndim - 1, a.ndim))
    got = gp.stack([x, *(o[0] for o in others)], axis=axis)
    same(got, np.stack([a, *(o[1] for o in others)], axis))


def test_stack_shape_mismatch() -> None:
    with pytest.raises(ValueError, match=r"\(2,\) but arrays\[1\] has shape \(3,\)"):
        gp.stack([gp.zeros((2,)), gp.zeros((3,))])


@FAST
@given(arrays(), st.data())
def test_roll_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    shift: Any = data.draw(st.integers(-7, 7))
    axis: Any = None
    if a.ndim and data.draw(st.booleans()):
        axes = tuple(data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=1, max_size=3)))
        if data.draw(st.booleans()):
            shift = tuple(data.draw(st.integers(-7, 7)) for _ in axes)
        axis = axes if len(axes) > 1 or data.draw(st.booleans()) else axes[0]
    same(gp.roll(x, shift, axis=axis), np.roll(a, shift, axis))


def test_roll_errors() -> None:
    x = gp.zeros((2, 3))
    with pytest.raises(ValueError, match="same length"):
        gp.roll(x, (1, 2), axis=(0, 1, 1))
    with pytest.raises(ValueError, match="axis=None, shift must be one int"):
        gp.roll(x, (1, 2))
    with pytest.raises(TypeError, match="shift must be an int"):
        gp.roll(x, 1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", [gp.float64, gp.uint8, gp.float8_e5m2])
def test_roll_kernel_writes_every_element(dtype: dt.DataType) -> None:
    x = make(host_data(dtype, (3, 4), 1), "strided")[0]
    out = gp.from_numpy(np.full((3, 4), 9, np.float32).astype(dtype.to_numpy_dtype()))
    kernel_on("roll", x.device, (dtype,))(x, out, (1, 3), (0, 1))
    same(out, np.roll(x.to_numpy(), (1, 3), (0, 1)))


@FAST
@given(arrays(max_dims=3), st.data())
def test_repeat_matches_numpy(xa: Any, data: Any) -> None:
    x, a = xa
    axis = data.draw(st.none() | st.integers(-max(a.ndim, 1), max(a.ndim, 1) - 1))
    n = a.size if axis is None else (a.shape[axis] if a.ndim else 1)
    kind = data.draw(st.sampled_from(["int", "array", "one"]))
    if kind == "int":
        reps: Any = data.draw(st.integers(0, 3))
        host_reps: Any = reps
    else:
        host_reps = np.asarray(
            data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
            if kind == "array"
            else [data.draw(st.integers(0, 3))],
            dtype=data.draw(st.sampled_from([np.int64, np.int32, np.uint8])),
        )
        reps = gp.from_numpy(host_reps)
    same(gp.repeat(x, reps, axis=axis), np.repeat(a, host_reps, axis))


def test_repeat_errors() -> None:
    x = gp.zeros((2, 3))
    with pytest.raises(ValueError, match="non-negative, got -1"):
        gp.repeat(x, -1)
    with pytest.raises(ValueError, match="non-negative, got -2"):
        gp.repeat(x, gp.asarray([1, -2]), axis=0)
    with pytest.raises(ValueError, match=r"shape \(3,\) does not broadcast to the 2"):
        gp.repeat(x, gp.asarray([1, 2, 3]), axis=0)
    with pytest.raises(TypeError, match="integer dtype, got float32"):
        gp.repeat(x, gp.asarray([1.0, 2.0]), axis=0)
    with pytest.raises(TypeError, match="repeats must be an int"):
        gp.repeat(x, 1.5)  # type: ignore[arg-type]


@FAST
@given(arrays(max_dims=3), st.lists(st.integers(0, 3), max_size=4))
def test_tile_matches_numpy(xa: Any, reps: list[int]) -> None:
    x, a = xa
    same(gp.tile(x, tuple(reps)), np.tile(a, tuple(reps)))


def test_tile_errors() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        gp.tile(gp.zeros((2,)), (-1,))
    with pytest.raises(TypeError, match="tuple of ints"):
        gp.tile(gp.zeros((2,)), (1.5,))  # type: ignore[arg-type]


def test_non_arrays_are_refused_by_name() -> None:
    with pytest.raises(TypeError, match="flip: x must be a GPUArray"):
        gp.flip(np.zeros(3))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"arrays\[1\] must be a GPUArray"):
        gp.stack([gp.zeros(2), [0, 0]])  # type: ignore[list-item]


def test_cpu_provider_has_the_data_moving_kernels() -> None:
    from pygpukit.backends.cpu import make_provider

    kernels = make_provider().kernels
    for op in ("concat", "roll", "repeat", "matmul", "take", "take_along_axis", "gather",
               "scatter", "mask_select", "mask_assign"):  # fmt: skip
        assert op in kernels, op
    x = gp.asarray(np.arange(4))
    same(gp.roll(x, 1, backend="cpu"), np.roll(np.arange(4), 1))
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        gp.concat([x, x], backend="nope")
