"""GPUArray: metadata, views sharing memory, conversions, operators and bad input."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit import testing as gpt
from pygpukit._views import contiguous_strides

FAST = settings(max_examples=50, deadline=None)


@FAST
@given(gpt.views())
def test_metadata_matches_numpy(x: gp.GPUArray) -> None:
    h = x.to_numpy()
    assert x.shape == h.shape and x.ndim == h.ndim and x.size == h.size
    assert x.itemsize == h.itemsize and x.nbytes == h.nbytes
    assert x.dtype.to_numpy_dtype() == h.dtype and x.device == gp.Device("cpu")
    if x.ndim >= 2:
        np.testing.assert_array_equal(x.mT.to_numpy(), np.swapaxes(h, -1, -2))
    if x.ndim == 2:
        np.testing.assert_array_equal(x.T.to_numpy(), h.T)


@FAST
@given(st.lists(st.integers(0, 5), min_size=0, max_size=4), gpt.dtypes())
def test_empty_strides_are_numpys_for_every_rank_and_zero_sizes(
    shape: list[int], dtype: gp.DataType
) -> None:
    """GPUArray.empty has fast paths for 1-D and 2-D shapes (matmul outputs); every rank
    gets the general C-contiguous strides (zero-size dimensions count as 1, so strides stay
    those of the nonempty shape; NumPy 2 gives such arrays other strides) and NumPy's byte
    count."""
    x = gp.GPUArray.empty(tuple(shape), dtype, gp.Device("cpu"))
    want = np.empty(tuple(shape), dtype.to_numpy_dtype())
    assert x.strides == contiguous_strides(tuple(shape), dtype.itemsize)
    assert x.nbytes == want.nbytes and x.to_numpy().shape == want.shape
    if want.size:
        assert x.strides == want.strides


@FAST
@given(gpt.views(dtype=gpt.dtypes("numeric")), st.data())
def test_basic_indexing_matches_numpy_and_shares_memory(
    x: gp.GPUArray, data: st.DataObject
) -> None:
    h = x.to_numpy()
    key = []
    for n in x.shape:
        kind = data.draw(st.sampled_from(["int", "slice", "none"]))
        if kind == "int" and n:
            key.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "none":
            key.append(None)
            key.append(slice(None))
        else:
            key.append(slice(data.draw(st.integers(-n - 1, n + 1)), data.draw(st.integers(-n - 1, n + 1)),  # noqa: E501
                             data.draw(st.sampled_from([1, 2, -1, -3]))))  # fmt: skip
    if data.draw(st.booleans()):
        key.insert(data.draw(st.integers(0, len(key))), Ellipsis)
    v = x[tuple(key)]
    np.testing.assert_array_equal(v.to_numpy(), h[tuple(key)])
    assert v.buffer is x.buffer


def test_views_share_memory_and_reshape_copies_only_when_needed() -> None:
    x = gp.asarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    for v in (x.reshape(6, 4), x.transpose(2, 0, 1), x[None], x[:, ::-1], x[0].expand_dims(0),
              x[:1].squeeze(0), x[0, 0].broadcast_to((3, 4)), x.reshape(-1)):  # fmt: skip
        assert v.buffer is x.buffer
    t = x.mT.reshape(-1)
    assert t.buffer is not x.buffer
    np.testing.assert_array_equal(
        t.to_numpy(), np.arange(24).reshape(2, 3, 4).swapaxes(1, 2).ravel()
    )
    with pytest.raises(ValueError, match="without a copy"):
        x.mT.reshape(-1, copy=False)
    x[0, 0, 0] = 100.0
    assert x.reshape(6, 4)[0, 0].item() == 100.0


def test_setitem_scalars_arrays_broadcast_and_overlap() -> None:
    h = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = gp.asarray(h.copy())
    x[0] = 7
    h[0] = 7
    x[:, 1] = gp.asarray(np.array([1, 2, 3], dtype=np.int32))
    h[:, 1] = [1, 2, 3]
    x[1:] = x[:-1]  # overlapping source and target
    h[1:] = h[:-1].copy()
    x[..., ::-2] = gp.asarray(np.array([9, 8], dtype=np.int32))
    h[..., ::-2] = [9, 8]
    np.testing.assert_array_equal(x.to_numpy(), h)
    with pytest.raises(ValueError, match="broadcast"):
        x[0] = gp.ones((2, 2), dtype="int32")
    with pytest.raises(TypeError, match="host ndarray"):
        x[0] = np.ones(4)
    with pytest.raises(OverflowError, match="int32"):
        x[0] = 2**40
    with pytest.raises(IndexError, match="out of bounds"):
        x[3] = 1


def test_conversions() -> None:
    x = gp.asarray(np.array([[1.5, -2.0]], dtype=np.float32))
    assert float(x[0, 0]) == 1.5 and int(x[0, 1]) == -2 and bool(x[0, 0]) is True
    assert x[0, 1].item() == -2.0 and x.tolist() == [[1.5, -2.0]]
    assert np.asarray(x).dtype == np.float32 and x.__array__(np.float64).dtype == np.float64
    assert len(x) == 1 and [r.shape for r in x] == [(2,)]
    assert repr(x[0]).startswith("GPUArray([ 1.5, -2. ]") and "float32" in repr(x)
    c = x.copy()
    assert c.buffer is not x.buffer and c.is_contiguous
    sq = gp.asarray(np.eye(2, dtype=np.float32))
    assert x.contiguous() is x and sq.mT.contiguous().buffer is not sq.buffer
    assert x.astype("float32", copy=False) is x and x.astype("int8").tolist() == [[1, -2]]
    with pytest.raises(ValueError, match="one-element"):
        bool(x)
    with pytest.raises(TypeError, match="0-d"):
        len(x[0, 0])
    with pytest.raises(TypeError, match="0-d"):
        iter(x[0, 0])
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)
    with pytest.raises(ValueError, match="without a copy"):
        x.__array__(copy=False)


@pytest.mark.parametrize(
    ("expr", "ref"),
    [(lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract), (lambda a, b: a * b, np.multiply),  # noqa: E501
     (lambda a, b: a / b, np.true_divide), (lambda a, b: a // b, np.floor_divide),
     (lambda a, b: a % b, np.remainder), (lambda a, b: a**b, np.power),
     (lambda a, b: a < b, np.less), (lambda a, b: a <= b, np.less_equal), (lambda a, b: a > b, np.greater),  # noqa: E501
     (lambda a, b: a >= b, np.greater_equal), (lambda a, b: a == b, np.equal), (lambda a, b: a != b, np.not_equal)],  # noqa: E501
)  # fmt: skip
def test_operators_and_reflected_forms(expr: object, ref: np.ufunc) -> None:
    h1 = np.array([[1.5, 2.0, 3.0]], dtype=np.float32)
    h2 = np.array([[2.0], [0.5]], dtype=np.float32)
    a, b = gp.asarray(h1), gp.asarray(h2)
    gpt.assert_allclose(expr(a, b), ref(h1, h2), op_kind="transcendental")  # type: ignore[operator]
    gpt.assert_allclose(expr(a, 2.0), ref(h1, np.float32(2.0)), op_kind="transcendental")  # type: ignore[operator]
    gpt.assert_allclose(expr(3.0, a), ref(np.float32(3.0), h1), op_kind="transcendental")  # type: ignore[operator]


def test_integer_bitwise_unary_and_inplace_operators() -> None:
    h = np.array([3, -4, 5], dtype=np.int16)
    x = gp.asarray(h.copy())
    for got, want in (((x & 6), h & 6), ((x | 1), h | 1), ((x ^ 5), h ^ 5), ((x << 2), h << 2),
                      ((x >> 1), h >> 1), ((~x), ~h), ((-x), -h), ((+x), +h), (abs(x), abs(h)),
                      ((6 & x), 6 & h), ((1 << x[:1]), 1 << h[:1])):  # fmt: skip
        np.testing.assert_array_equal(got.to_numpy(), want)
    buf = x.buffer
    x += 1
    x *= 2
    x -= 3
    x //= 2
    x %= 7
    x **= 2
    x <<= 1
    x >>= 1
    x |= 8
    x &= 15
    x ^= 1
    want = (((((((h + 1) * 2 - 3) // 2) % 7) ** 2 << 1) >> 1 | 8) & 15) ^ 1
    np.testing.assert_array_equal(x.to_numpy(), want)
    assert x.buffer is buf
    with pytest.raises(ValueError, match="in place"):
        x /= 2
    with pytest.raises(ValueError, match="in place"):
        x += gp.ones((2, 3), dtype="int16")


def test_mixing_host_arrays_is_refused() -> None:
    x = gp.ones(3)
    with pytest.raises(TypeError, match="host ndarray"):
        x + np.ones(3)
    with pytest.raises(TypeError, match="host list"):
        x * [1, 2, 3]
    with pytest.raises(TypeError, match="NoneType"):
        x - None


def test_bad_views_raise_naming_the_problem() -> None:
    x = gp.zeros((2, 3))
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match="axis 1 with size 3"):
        x[0, -4]
    with pytest.raises(ValueError, match="squeeze axis 0 of size 2"):
        x.squeeze(0)
    with pytest.raises(ValueError, match="0-d"):
        x[0, 0].squeeze(0)
    with pytest.raises(ValueError, match="cannot broadcast"):
        x.broadcast_to((3, 3))
    with pytest.raises(ValueError, match="repeated axis"):
        x.transpose(0, 0)
    with pytest.raises(ValueError, match="cannot reshape array of size 6"):
        x.reshape(4, -1)
    with pytest.raises(ValueError, match="2-D"):
        _ = x[0].T
