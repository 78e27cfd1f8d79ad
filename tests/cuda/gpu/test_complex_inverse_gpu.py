"""The complex inverse functions, pow, round and cumulative_prod on cuda against NumPy's
complex128 results: wide magnitudes, points on and beside the branch cuts, every pair of
special parts (signed zeros checked), views, and kernels writing into poisoned outputs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit._plugins import registry
from pygpukit.testing._assertions import poison

pytestmark = pytest.mark.gpu

OPS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "asinh": np.arcsinh, "asin": np.arcsin, "acosh": np.arccosh, "acos": np.arccos,
    "atanh": np.arctanh, "atan": np.arctan,
}  # fmt: skip
RTOL = {"complex128": 4e-15, "complex64": 1e-6}
RNG = np.random.default_rng(21)


def _close_partwise(got: np.ndarray, want: np.ndarray, rtol: float, msg: str) -> None:
    """Each part within rtol of max(|part|, |want|), or both NaN, or the same infinity (a
    float32 subnormal part may be a few subnormal steps off: their spacing is absolute)."""
    scale = np.abs(want)
    for part in ("real", "imag"):
        g, w = getattr(got, part).astype(np.float64), getattr(want, part)
        ok = (np.isnan(g) & np.isnan(w)) | (np.isinf(w) & (g == w))
        ok |= np.abs(g - w) <= rtol * np.maximum(np.abs(w), scale) + (1e-44 if rtol > 1e-9 else 0)
        assert ok.all(), f"{msg} {part}: {got[~ok][:5]} != {want[~ok][:5]}"


def _inputs(dtype: str) -> np.ndarray:
    """Wide magnitudes, the cuts (+-0 and tiny off-axis parts), and points hugging +-1, +-i."""
    n = 300
    wide = 10.0 ** RNG.uniform(-300, 300, (2, 2000)) * RNG.choice([-1.0, 1.0], (2, 2000))
    side = RNG.choice([0.0, -0.0, 1e-300, -1e-30, 1e-20], n)
    far = (1 + 10.0 ** RNG.uniform(-12, 6, n)) * RNG.choice([-1.0, 1.0], n)
    near = 1 + 10.0 ** RNG.uniform(-14, -1, n) * RNG.choice([-1.0, 1.0], n)
    pieces = [wide[0] + 1j * wide[1], RNG.standard_normal(500) + 1j * RNG.standard_normal(500)]
    for re, im in ((far, side), (side, far), (near, 10.0 ** RNG.uniform(-300, -1, n)),
                   (10.0 ** RNG.uniform(-300, -1, n), near)):  # fmt: skip
        z = np.empty(n, np.complex128)
        z.real, z.imag = re, im
        pieces.append(z)
    a = np.concatenate(pieces)
    if dtype == "complex64":  # float32 inputs, normal parts (see the host test)
        a = a[np.abs(a) < 1e38].astype(np.complex64).astype(np.complex128)
        tiny = np.finfo(np.float32).tiny
        a.real[np.abs(a.real) < tiny] = 0.0
        a.imag[np.abs(a.imag) < tiny] = 0.0
    return a


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_inverse_functions_match_numpy(op: str, dtype: str) -> None:
    a = _inputs(dtype)
    x = gp.asarray(a.astype(dtype), device="cuda")
    got = getattr(gp, op)(x)
    assert got.dtype.name == dtype and got.device.type == "cuda"
    with np.errstate(all="ignore"):
        want = OPS[op](a)
    keep = np.isfinite(want)  # atanh(+-1): the pole, checked with the special values
    _close_partwise(got.to_numpy()[keep], want[keep], RTOL[dtype], f"{op} {dtype}")


_SPECIAL_PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, np.inf, -np.inf, np.nan, 3e9]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_special_values_and_signed_zeros(op: str, dtype: str) -> None:
    """NaNs, infinities and signed zeros as NumPy gives them (the standard's C99 tables)."""
    n = len(_SPECIAL_PARTS)
    a = np.empty(n * n, np.complex128)
    a.real, a.imag = np.repeat(_SPECIAL_PARTS, n), np.tile(_SPECIAL_PARTS, n)
    got = getattr(gp, op)(gp.asarray(a.astype(dtype), device="cuda")).to_numpy()
    with np.errstate(all="ignore"):
        want = OPS[op](a)
    for part in ("real", "imag"):
        g, w = getattr(got, part).astype(np.float64), getattr(want, part)
        same = (np.isnan(g) & np.isnan(w)) | (
            np.isclose(g, w, rtol=RTOL[dtype], atol=0)
            & ((g != 0) | (np.signbit(g) == np.signbit(w)))
        )
        assert same.all(), f"{op} {part} at {a[~same][:4]}: {g[~same][:4]} vs {w[~same][:4]}"


def _on_an_axis(along: float, off: float, imaginary_axis: bool) -> complex:
    return complex(off, along) if imaginary_axis else complex(along, off)


#: the plane, and points on or beside the cuts (a part beyond or near +-1 on one axis, the
#: other a signed zero or tiny)
POINTS = st.one_of(
    st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e300),
    st.builds(
        _on_an_axis,
        st.one_of(st.floats(1.0, 1e300), st.floats(-1e300, -1.0), st.floats(0.999, 1.001)),
        st.sampled_from([0.0, -0.0, 1e-300, -1e-300, 1e-20, -1e-12]),
        st.booleans(),
    ),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(POINTS, min_size=1, max_size=16), st.sampled_from(sorted(OPS)))
def test_hypothesis_values(values: list[complex], op: str) -> None:
    a = np.array(values, dtype=np.complex128)
    got = getattr(gp, op)(gp.asarray(a, device="cuda")).to_numpy()
    with np.errstate(all="ignore"):
        want = OPS[op](a)
    keep = np.isfinite(want)
    _close_partwise(got[keep], want[keep], RTOL["complex128"], op)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_pow(dtype: str) -> None:
    """Arrays, broadcasting, scalars on both sides, a real operand; NumPy's rules for zero
    exponents and bases and small integral exponents."""
    n = 600
    a = RNG.uniform(0.05, 4, n) * np.exp(1j * RNG.uniform(-np.pi, np.pi, n))
    b = RNG.standard_normal(n) * 3 + 1j * RNG.standard_normal(n)
    b[::3] = np.round(b[::3].real * 10)
    b[1::7] = 0
    a[2::11] = 0
    a[3::13] = -2.0  # on the log's cut
    a, b = a.astype(dtype), b.astype(dtype)
    rtol = 1e-12 if dtype == "complex128" else 2e-5
    x, y = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    with np.errstate(all="ignore"):
        wide_a, wide_b = a.astype(np.complex128), b.astype(np.complex128)
        want = wide_a**wide_b
        fits = ~(np.abs(want) > np.finfo(dtype).max / 4)
        _close_partwise((x**y).to_numpy()[fits], want[fits], rtol, "pow")
        _close_partwise(gp.pow(x, 2.5 - 1j).to_numpy(), wide_a ** complex(np.complex64(2.5 - 1j)),
                        rtol, "pow scalar")  # fmt: skip
        _close_partwise(gp.pow(1.5, y).to_numpy(), 1.5**wide_b, rtol, "scalar pow")
        base = RNG.uniform(0.5, 2, (6, 4)) + 1j * RNG.uniform(-1, 1, (6, 4))
        grid = gp.asarray(base.astype(dtype), device="cuda").mT  # a transposed view
        exps = RNG.uniform(-2, 2, (4, 1)).astype(np.float32)
        col = gp.asarray(exps, device="cuda")  # a real operand broadcast along the rows
        want = base.astype(dtype).astype(np.complex128).T ** exps.astype(np.float64)
        _close_partwise(gp.pow(grid, col).to_numpy(), want, rtol, "pow real broadcast")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_round_rounds_each_part_half_to_even(dtype: str) -> None:
    parts = np.array([0.5, 1.5, -2.5, -0.4, -0.0, np.inf, np.nan, 2.7, 1e20])
    a = np.empty(parts.size * 3, dtype)
    a.real = np.tile(parts, 3)
    a.imag = np.repeat(parts[[0, 2, 7]], parts.size)
    got = gp.round(gp.asarray(a, device="cuda")[::-1]).to_numpy()
    for part in ("real", "imag"):
        want = np.rint(getattr(a[::-1], part))
        np.testing.assert_array_equal(getattr(got, part), want)
        assert np.array_equal(np.signbit(getattr(got, part)), np.signbit(want))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_cumulative_prod(dtype: str) -> None:
    """Along each axis of a strided view, rows longer than a warp, include_initial, a wider
    result dtype, and a real input into a complex result."""
    rtol = 1e-12 if dtype == "complex128" else 2e-5
    host = np.exp(1j * RNG.uniform(-np.pi, np.pi, (5, 70, 3))) * RNG.uniform(0.9, 1.1, (5, 70, 3))
    host = host.astype(dtype)
    x = gp.asarray(host, device="cuda")[:, ::-1]
    view = host[:, ::-1].astype(np.complex128)
    for axis in range(3):
        got = gp.cumulative_prod(x, axis=axis)
        assert got.dtype.name == dtype
        _close_partwise(got.to_numpy(), np.cumprod(view, axis=axis), rtol, f"axis {axis}")
    first = gp.cumulative_prod(x, axis=1, include_initial=True).to_numpy()
    np.testing.assert_array_equal(first[:, 0], np.ones((5, 3), dtype))
    _close_partwise(first[:, 1:], np.cumprod(view, axis=1), rtol, "include_initial")
    wide = gp.cumulative_prod(x, axis=1, dtype=gp.complex128)
    assert wide.dtype is gp.complex128
    _close_partwise(wide.to_numpy(), np.cumprod(view, axis=1), rtol, "dtype=complex128")
    real = gp.asarray(np.linspace(0.5, 1.5, 40, dtype=np.float32), device="cuda")
    promoted = gp.cumulative_prod(real, dtype=gp.complex64).to_numpy()
    _close_partwise(promoted, np.cumprod(np.linspace(0.5, 1.5, 40, dtype=np.float32)) + 0j,
                    2e-5, "real into complex")  # fmt: skip


@pytest.mark.parametrize("op", [*sorted(OPS), "round"])
def test_kernels_write_every_element_of_a_poisoned_strided_output(op: str) -> None:
    """Called directly, a kernel fills a poisoned strided output and leaves the columns in
    between alone."""
    kernel = registry().providers["cuda"].kernels[op].fn
    a = (RNG.standard_normal((4, 6)) + 1j * RNG.standard_normal((4, 6))) * 2
    x = gp.asarray(a, device="cuda")
    parent = poison(gp.empty((4, 12), dtype=gp.complex128, device="cuda"))
    kernel(x, parent[:, ::2])
    back = parent.to_numpy()
    want = np.rint(a) if op == "round" else OPS[op](a)
    _close_partwise(back[:, ::2], want, RTOL["complex128"], op)
    assert np.isnan(back[:, 1::2]).all()


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_nonzero_masks_and_linspace(dtype: str) -> None:
    """nonzero counts an element where either part is nonzero; x[mask] = value and
    x[mask] read back; linspace between complex ends."""
    a = np.array([[0, 1j, 2], [0, complex(np.nan, 0), -0.0]], dtype=dtype)
    x = gp.asarray(a, device="cuda")
    for got, want in zip(gp.nonzero(x), np.nonzero(a), strict=True):
        np.testing.assert_array_equal(got.to_numpy(), want)
    mask_host = np.array([[True, False, True], [False, True, True]])
    mask = gp.asarray(mask_host, device="cuda")
    x[mask] = 3 - 4j
    want = a.copy()
    want[mask_host] = 3 - 4j
    np.testing.assert_array_equal(x.to_numpy(), want)
    values = (RNG.standard_normal(4) + 1j * RNG.standard_normal(4)).astype(dtype)
    x[mask] = gp.asarray(values, device="cuda")
    want[mask_host] = values
    np.testing.assert_array_equal(x.to_numpy(), want)
    np.testing.assert_array_equal(x[mask].to_numpy(), values)
    got = gp.linspace(1 - 1j, 3 + 2j, 7, dtype=dtype, device="cuda").to_numpy()
    _close_partwise(got, np.linspace(1 - 1j, 3 + 2j, 7), RTOL[dtype] * 4, "linspace")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_zero_sign_picks_the_side_of_the_cut(op: str, dtype: str) -> None:
    """On a cut, p + 0i is the limit from above and p - 0i from below (C99 Annex G)."""
    real_cut = op in ("asin", "acos", "atanh", "acosh")
    along = np.array([1.5, 2.0, 7.0, 1e3, 1e10, -1.5, -3.0, -1e5])
    if op == "acosh":  # its cut is (-inf, 1)
        along = np.array([0.5, -0.5, 0.0, -1.5, -3.0, -1e5, 0.99])
    for sign in (1.0, -1.0):
        zero, tiny = np.empty(along.size, np.complex128), np.empty(along.size, np.complex128)
        if real_cut:
            zero.real, zero.imag, tiny.real, tiny.imag = along, sign * 0.0, along, sign * 1e-30
        else:
            zero.real, zero.imag, tiny.real, tiny.imag = sign * 0.0, along, sign * 1e-30, along
        got = getattr(gp, op)(gp.asarray(zero.astype(dtype), device="cuda")).to_numpy()
        np.testing.assert_allclose(got, OPS[op](tiny), rtol=RTOL[dtype] * 4,
                                   atol=1e-6 if dtype == "complex64" else 1e-14)  # fmt: skip


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_log1p_is_accurate_near_zero(dtype: str) -> None:
    """log1p(z) near 0 against its series (NumPy's own complex log1p is not accurate there)."""
    mag = 10.0 ** RNG.uniform(-30, -3, (2, 200)) * RNG.choice([-1.0, 1.0], (2, 200))
    z = (mag[0] + 1j * mag[1]).astype(dtype)
    got = gp.log1p(gp.asarray(z, device="cuda")).to_numpy()
    wide = z.astype(np.complex128)
    want = sum((-1) ** (k + 1) * wide**k / k for k in range(1, 9))
    _close_partwise(got, want, RTOL[dtype], "log1p near 0")
