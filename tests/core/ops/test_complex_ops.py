"""Complex arrays through the op layer: elementwise ops, reductions, linear algebra and the
refusals of ops the standard leaves undefined for complex numbers, against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit import _dtypes as dt
from pygpukit._ops.elementwise import BINARY, COMPLEX_BINARY, COMPLEX_UNARY, UNARY
from pygpukit.testing import assert_allclose
from pygpukit.testing._strategies import shapes, views

COMPLEX = st.sampled_from(dt.COMPLEX_DTYPES)
#: the part of the plane each op is checked on (away from branch cuts and poles)
DOMAIN = {"log": (0.1, 4.0), "log1p": (0.1, 4.0), "log2": (0.1, 4.0), "log10": (0.1, 4.0),
          "sqrt": (0.1, 4.0), "acosh": (1.1, 4.0), "asin": (-0.8, 0.8), "acos": (-0.8, 0.8),
          "atanh": (-0.8, 0.8), "tan": (-1.2, 1.2)}  # fmt: skip
#: NumPy's name where it differs
NUMPY = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
         "acosh": "arccosh", "atanh": "arctanh", "round": "rint", "pow": "power",
         "divide": "true_divide"}  # fmt: skip
EXACT = {"negative", "positive", "round", "isfinite", "isinf", "isnan", "logical_not", "equal",
         "not_equal", "logical_and", "logical_or", "logical_xor"}  # fmt: skip


def _np(op: str) -> Any:
    return getattr(np, NUMPY.get(op, op))


@pytest.mark.parametrize("op", sorted(COMPLEX_UNARY))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_unary_ops_match_numpy(op: str, data: st.DataObject) -> None:
    x = data.draw(views(COMPLEX, shapes(max_dims=2, max_side=4), DOMAIN.get(op, (-3.0, 3.0))))
    host = x.to_numpy()
    with np.errstate(all="ignore"):
        want = _np(op)(host.astype(np.complex128))
    got = getattr(gp, op)(x)
    out_dtype = dt.real_of(x.dtype) if op == "abs" else x.dtype
    if want.dtype == np.bool_:
        out_dtype = gp.bool_
    assert got.dtype is out_dtype
    assert_allclose(got, want, out_dtype, op_kind="exact" if op in EXACT else "transcendental")


@pytest.mark.parametrize("op", sorted(COMPLEX_BINARY))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_binary_ops_match_numpy(op: str, data: st.DataObject) -> None:
    shape = data.draw(shapes(max_dims=2, max_side=4))
    bounds = (0.5, 2.0) if op in ("divide", "pow") else (-3.0, 3.0)
    if op in EXACT:  # whole numbers, so equal pairs occur
        bounds = (-1.0, 1.0)
    x1 = data.draw(views(COMPLEX, st.just(shape), bounds))
    x2 = data.draw(views(st.sampled_from((*dt.COMPLEX_DTYPES, gp.float32, gp.float64)),
                         st.just(shape), bounds))  # fmt: skip
    if op in EXACT:
        x1, x2 = gp.round(x1), gp.round(x2)
    want_dtype = gp.promote_types(x1.dtype, x2.dtype)
    wide = [np.asarray(v.to_numpy()).astype(np.complex128) for v in (x1, x2)]
    with np.errstate(all="ignore"):
        want = _np(op)(*wide)
    got = getattr(gp, op)(x1, x2)
    out_dtype = gp.bool_ if want.dtype == np.bool_ else want_dtype
    assert got.dtype is out_dtype
    assert_allclose(got, want, out_dtype, op_kind="exact" if op in EXACT else "transcendental")


def test_scalar_operands() -> None:
    z = gp.asarray(np.array([1 + 1j, -2j], dtype=np.complex64))
    assert (z * 2).tolist() == [2 + 2j, -4j] and (z + 1.5).dtype is gp.complex64
    assert (1j * z).tolist() == [-1 + 1j, 2 + 0j]
    assert (z == (1 + 1j)).tolist() == [True, False]
    assert gp.where(gp.asarray([True, False]), z, 5j).tolist() == [1 + 1j, 5j]
    z += 1
    assert z.tolist() == [2 + 1j, 1 - 2j]
    x = gp.asarray([1.0, 2.0])
    with pytest.raises(ValueError, match="in place"):
        x += 1j  # the result would be complex


@pytest.mark.parametrize("op", sorted(set(UNARY) - COMPLEX_UNARY - {"gelu"}))
def test_unary_ops_undefined_for_complex_refuse(op: str) -> None:
    z = gp.asarray(np.array([1 + 1j], dtype=np.complex64))
    with pytest.raises(TypeError, match=f"{op} is not defined for complex dtypes.*complex64"):
        getattr(gp, op)(z)


@pytest.mark.parametrize("op", sorted(set(BINARY) - COMPLEX_BINARY))
def test_binary_ops_undefined_for_complex_refuse(op: str) -> None:
    z = gp.asarray(np.array([1 + 1j], dtype=np.complex128))
    with pytest.raises(TypeError, match=f"{op} is not defined for complex dtypes.*complex128"):
        getattr(gp, op)(z, gp.asarray([1.0]))


def test_ordering_ops_refuse_complex() -> None:
    z = gp.asarray(np.array([[1 + 1j, 2]], dtype=np.complex64))
    for fn in (gp.max, gp.min, gp.argmax, gp.argmin, gp.sort, gp.argsort, gp.var, gp.std):
        with pytest.raises(TypeError, match=r"not defined for complex dtypes.*complex64"):
            fn(z)
    with pytest.raises(TypeError, match="complex"):
        z < z  # noqa: B015
    with pytest.raises(TypeError, match="not defined for complex"):
        gp.clip(z, 0, 1)
    with pytest.raises(TypeError, match="complex to real"):
        gp.sum(z, dtype=gp.float32)


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_reductions_match_numpy(data: st.DataObject) -> None:
    x = data.draw(views(COMPLEX, shapes(min_dims=1, max_dims=3, max_side=4), (-2.0, 2.0)))
    host = x.to_numpy().astype(np.complex128)
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    for name, ref in (("sum", np.sum), ("prod", np.prod), ("mean", np.mean)):
        with np.errstate(all="ignore"):
            want = ref(host, axis=axis)
        got = getattr(gp, name)(x, axis=axis)
        assert got.dtype is x.dtype
        assert_allclose(got, want, op_kind="reduction")
    a = 0 if axis is None else axis
    if x.ndim == 1 or axis is not None:
        assert_allclose(gp.cumulative_sum(x, axis=a), np.cumsum(host, axis=a), op_kind="reduction")
    assert gp.any(x).item() == bool(np.any(host)) and gp.all(x).item() == bool(np.all(host))
    assert gp.count_nonzero(x).item() == np.count_nonzero(host)


def test_sum_of_real_into_complex_and_nonzero() -> None:
    x = gp.asarray(np.array([1.0, 2.0], dtype=np.float32))
    assert gp.sum(x, dtype=gp.complex64).dtype is gp.complex64
    z = gp.asarray(np.array([0, 1j, 0, 2], dtype=np.complex64))
    assert gp.nonzero(z)[0].tolist() == [1, 3]


def test_parts_and_reciprocal() -> None:
    host = np.array([[1 + 2j, -3 - 0.5j], [0j, -1 + 0j]], dtype=np.complex64)
    z = gp.asarray(host)[:, ::-1]
    h = host[:, ::-1]
    for name, ref in (("real", np.real), ("imag", np.imag), ("conj", np.conj),
                      ("angle", np.angle)):  # fmt: skip
        got = getattr(gp, name)(z)
        if name != "angle":  # the methods NumPy users reach for
            method = getattr(z, name)
            assert_allclose(method() if name == "conj" else method, ref(h))
        assert got.dtype is (gp.complex64 if name == "conj" else gp.float32)
        assert_allclose(got, ref(h), op_kind="transcendental")
    r = gp.asarray(np.array([1.5, -2.0], dtype=np.float64))
    assert gp.real(r).tolist() == [1.5, -2.0] and gp.conj(r).dtype is gp.float64
    assert gp.imag(r).tolist() == [0.0, 0.0] and gp.imag(r).dtype is gp.float64
    assert_allclose(gp.angle(r), np.angle(r.to_numpy()))
    assert gp.angle(gp.asarray([-3])).dtype is gp.float32
    with np.errstate(all="ignore"):  # 1 / 0j
        want = 1 / h.astype(np.complex128)
    assert_allclose(gp.reciprocal(z), want, op_kind="transcendental")
    assert gp.reciprocal(gp.asarray([2, 4])).tolist() == [0.5, 0.25]
    with pytest.raises(TypeError, match="numeric"):
        gp.real(gp.asarray([True]))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_linear_algebra(dtype: Any) -> None:
    rng = np.random.default_rng(7)

    def rand(*shape: int) -> np.ndarray:
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)

    a, b = rand(2, 3, 4), rand(4, 5)
    kind = "matmul"
    assert_allclose(gp.asarray(a) @ gp.asarray(b), a.astype(np.complex128) @ b, op_kind=kind)
    v, w = rand(3, 6), rand(6)
    got = gp.vecdot(gp.asarray(v), gp.asarray(w))
    want = np.sum(np.conj(v.astype(np.complex128)) * w, axis=-1)  # x1 conjugated
    assert_allclose(got, want, op_kind=kind)
    c, d = rand(3, 4, 2), rand(4, 3, 5)
    got = gp.tensordot(gp.asarray(c), gp.asarray(d), axes=([0, 1], [1, 0]))
    assert_allclose(got, np.tensordot(c.astype(np.complex128), d, ([0, 1], [1, 0])), op_kind=kind)
    mixed = gp.asarray(rng.uniform(-1, 1, (3, 4))) @ gp.asarray(rand(4, 2))
    assert mixed.dtype is gp.complex128  # float64 with either complex type


def test_indexing_and_manipulation_keep_complex() -> None:
    host = (np.arange(12).reshape(3, 4) + 1j * np.arange(12).reshape(3, 4)).astype(np.complex64)
    z = gp.asarray(host)
    np.testing.assert_array_equal(z[gp.asarray([2, 0])].to_numpy(), host[[2, 0]])
    np.testing.assert_array_equal(z[z.real > 5].to_numpy(), host[host.real > 5])
    np.testing.assert_array_equal(gp.concat([z, z], axis=0).to_numpy(), np.concatenate([host] * 2))
    np.testing.assert_array_equal(gp.roll(z, 1, axis=1).to_numpy(), np.roll(host, 1, axis=1))
    np.testing.assert_array_equal(gp.take(z, gp.asarray([1]), axis=1).to_numpy(), host[:, [1]])
    z[0, 0] = 5 - 5j
    z[gp.asarray([False, True, False])] = 1j
    host[0, 0] = 5 - 5j
    host[1] = 1j
    np.testing.assert_array_equal(z.to_numpy(), host)
    np.testing.assert_array_equal(gp.tril(z).to_numpy(), np.tril(host))


def test_special_values_follow_the_standard() -> None:
    """The standard's special cases where NumPy's complex ufuncs differ from it."""
    inf, nan = np.inf, np.nan
    z = gp.asarray(np.array([complex(inf, 0), complex(-inf, inf), complex(-inf, nan),
                             complex(nan, 0), 1e-9 + 1e-9j]))  # fmt: skip
    got = gp.expm1(z).to_numpy()
    assert got[0] == complex(inf, 0) and got[1] == -1 and got[2] == -1
    assert np.isnan(got[3].real) and got[3].imag == 0
    assert abs(got[4] - (1e-9 + 1.000000001e-9j)) < 1e-24  # still accurate near 0
    zero = gp.expm1(gp.asarray(np.array([complex(-0.0, 0.0)]))).to_numpy()[0]
    assert np.copysign(1, zero.real) == 1 and zero == 0  # +0 + 0j, as exp(x) - 1 gives
    t = gp.tanh(gp.asarray(np.array([complex(inf, 1e5), complex(-inf, -2)]))).to_numpy()
    assert (t[0].real, np.copysign(1, t[0].imag)) == (1.0, 1.0)
    assert (t[1].real, np.copysign(1, t[1].imag)) == (-1.0, -1.0)


def test_unique_orders_complex_values_as_numpy() -> None:
    host = np.array([1 + 1j, 0, 1 + 1j, -1j, 1 - 1j], dtype=np.complex64)
    values, indices, inverse, counts = gp.unique_all(gp.asarray(host))
    want, first, inv, cnt = np.unique(host, return_index=True, return_inverse=True,
                                      return_counts=True)  # fmt: skip
    assert values.tolist() == want.tolist() and indices.tolist() == first.tolist()
    assert inverse.tolist() == inv.tolist() and counts.tolist() == cnt.tolist()
