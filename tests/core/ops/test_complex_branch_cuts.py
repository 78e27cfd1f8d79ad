"""The complex inverse functions, pow and cumulative_prod through the public API on the CPU
provider: the branch cuts where the standard puts them (the sign of a zero imaginary part
picks the side), values near the cuts and over the whole float range against NumPy's
complex128 results (hypothesis), the standard's special-value tables, and the dtypes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

OPS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "asinh": np.arcsinh, "asin": np.arcsin, "acosh": np.arccosh, "acos": np.arccos,
    "atanh": np.arctanh, "atan": np.arctan,
}  # fmt: skip
#: where each function's cut lies: "real" (|x| > 1 on the real axis; acosh: x < 1) or
#: "imag" (|y| > 1 on the imaginary axis)
CUTS = {"asin": "real", "acos": "real", "atanh": "real", "acosh": "real", "asinh": "imag",
        "atan": "imag"}  # fmt: skip
RTOL = {"complex128": 1e-14, "complex64": 2e-6}


def _cpu(a: np.ndarray) -> gp.GPUArray:
    return gp.asarray(a, device="cpu")


def _on_cut(op: str) -> np.ndarray:
    """Points on op's cut (away from its ends), as magnitudes along the cut's axis."""
    along = np.array([1.5, 2.0, 7.0, 1e3, 1e10, -1.5, -3.0, -1e5])
    if op == "acosh":  # its cut is (-inf, 1): the points left of 1
        along = np.array([0.5, -0.5, 0.0, -1.5, -3.0, -1e5, 0.99])
    return along


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_zero_sign_picks_the_side_of_the_cut(op: str, dtype: str) -> None:
    """On the cut, x + 0i is the limit from one side and x - 0i from the other (C99 Annex G),
    so f(p +- 0i) equals f(p +- delta i) to rounding, and the two sides differ."""
    along = _on_cut(op)
    sides = {}
    for sign in (1.0, -1.0):
        zero, tiny = np.empty(along.size, np.complex128), np.empty(along.size, np.complex128)
        if CUTS[op] == "real":
            zero.real, zero.imag = along, sign * 0.0
            tiny.real, tiny.imag = along, sign * 1e-30
        else:
            zero.real, zero.imag = sign * 0.0, along
            tiny.real, tiny.imag = sign * 1e-30, along
        got = getattr(gp, op)(_cpu(zero.astype(dtype))).to_numpy()
        limit = OPS[op](tiny)
        atol = 1e-6 if dtype == "complex64" else 1e-14  # the 1e-30 step itself, rounded
        np.testing.assert_allclose(got, limit, rtol=RTOL[dtype], atol=atol,
                                   err_msg=f"{op} on its cut, side {sign:+}")  # fmt: skip
        sides[sign] = got
    assert not np.allclose(sides[1.0], sides[-1.0]), f"{op}: no jump across its cut"


def _near_cut_values() -> np.ndarray:
    rng = np.random.default_rng(3)
    n = 200
    far = (1 + 10.0 ** rng.uniform(-12, 8, n)) * rng.choice([-1.0, 1.0], n)
    off = rng.choice([0.0, -0.0, 1e-300, -1e-300, 1e-12, -1e-7], n)
    near_one = (1 + 10.0 ** rng.uniform(-15, -1, n) * rng.choice([-1.0, 1.0], n)) * rng.choice(
        [-1.0, 1.0], n
    )
    parts = [(far, off), (off, far), (near_one, off), (off, near_one)]
    out = []
    for re, im in parts:
        z = np.empty(n, np.complex128)
        z.real, z.imag = re, im
        out.append(z)
    return np.concatenate(out)


@pytest.mark.parametrize("op", sorted(OPS))
def test_near_the_cuts_against_numpy(op: str) -> None:
    a = _near_cut_values()
    for dtype in ("complex128", "complex64"):
        x = a.astype(dtype)
        got = getattr(gp, op)(_cpu(x))
        assert got.dtype.name == dtype
        with np.errstate(all="ignore"):
            want = OPS[op](x.astype(np.complex128))
        keep = np.isfinite(want)
        np.testing.assert_allclose(got.to_numpy()[keep], want[keep], rtol=RTOL[dtype] * 2,
                                   atol=0, err_msg=f"{op} {dtype}")  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e300),
             min_size=1, max_size=12),
    st.sampled_from(sorted(OPS)),
)  # fmt: skip
def test_hypothesis_values_over_the_float_range(values: list[complex], op: str) -> None:
    a = np.array(values, dtype=np.complex128)
    got = getattr(gp, op)(_cpu(a)).to_numpy()
    with np.errstate(all="ignore"):
        want = OPS[op](a)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_standard_special_values() -> None:
    """Rows of the standard's tables (C99 Annex G), checked with the signs of zeros."""
    inf, nan, pi = np.inf, np.nan, np.pi
    rows = [
        ("acosh", 0.0, 0.0, 0.0, pi / 2), ("acosh", -inf, 1.5, inf, pi),
        ("acosh", inf, inf, inf, pi / 4), ("acosh", nan, inf, inf, nan),
        ("acos", 0.0, 0.0, pi / 2, -0.0), ("acos", inf, 1.5, 0.0, -inf),
        ("acos", -inf, inf, 3 * pi / 4, -inf), ("asinh", 1.5, inf, inf, pi / 2),
        ("asinh", inf, 1.5, inf, 0.0), ("asinh", nan, 0.0, nan, 0.0),
        ("atanh", 1.0, 0.0, inf, 0.0), ("atanh", 1.5, inf, 0.0, pi / 2),
        ("atanh", inf, nan, 0.0, nan), ("atanh", 0.0, nan, 0.0, nan),
    ]  # fmt: skip
    for op, x, y, re, im in rows:
        z = np.empty(1, np.complex128)
        z.real, z.imag = x, y
        got = getattr(gp, op)(_cpu(z)).to_numpy()[0]
        for g, w in ((got.real, re), (got.imag, im)):
            if np.isnan(w):
                assert np.isnan(g), f"{op}({x}, {y}) = {got}"
            else:
                assert g == pytest.approx(w, rel=1e-15) and np.signbit(g) == np.signbit(w), (
                    f"{op}({x}, {y}) = {got}, want ({re}, {im})"
                )


def test_pow_rules_and_dtypes() -> None:
    z = _cpu(np.array([1 + 1j, 0j, -2 + 0j, 2 - 1j], dtype=np.complex64))
    sq = (z**2).to_numpy()
    assert sq.dtype == np.complex64 and sq[0] == 2j and sq[1] == 0
    assert np.all((z**0).to_numpy() == 1)  # x ** 0 is 1, even for a zero base
    half = (z**0.5).to_numpy()
    np.testing.assert_allclose(half[[0, 2, 3]], np.array([1 + 1j, -2, 2 - 1j]) ** 0.5, rtol=1e-6)
    assert (gp.pow(2.0, z)).dtype is gp.complex64
    wide = gp.pow(z, _cpu(np.array([1.5], dtype=np.float64)))
    assert wide.dtype is gp.complex128  # complex64 with float64 promotes to complex128


def test_cumulative_prod_complex_dtypes() -> None:
    a = np.array([[1 + 1j, 2, 1j], [0.5j, -1, 3 - 1j]], dtype=np.complex64)
    got = gp.cumulative_prod(_cpu(a), axis=1, include_initial=True)
    assert got.dtype is gp.complex64
    np.testing.assert_allclose(got.to_numpy()[:, 1:], np.cumprod(a, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(got.to_numpy()[:, 0], [1, 1])
    wide = gp.cumulative_prod(_cpu(a), axis=0, dtype=gp.complex128)
    assert wide.dtype is gp.complex128
    with pytest.raises(TypeError, match="complex to real"):
        gp.cumulative_prod(_cpu(a), axis=0, dtype=gp.float64)


def _log1p_series(z: np.ndarray) -> np.ndarray:
    """log(1 + z) = z - z^2/2 + z^3/3 - ..., exact to double rounding for |z| < 1e-3."""
    return sum((-1) ** (k + 1) * z**k / k for k in range(1, 9))  # type: ignore[no-any-return]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_log1p_is_accurate_near_zero(dtype: str) -> None:
    """NumPy's complex log1p is log(1 + z) as written (1e-10 gives 0 in complex64); the
    standard's log1p is the accurate one near 0."""
    rng = np.random.default_rng(8)
    mag = 10.0 ** rng.uniform(-30, -3, (2, 200)) * rng.choice([-1.0, 1.0], (2, 200))
    z = (mag[0] + 1j * mag[1]).astype(dtype)
    got = gp.log1p(_cpu(z)).to_numpy()
    want = _log1p_series(z.astype(np.complex128))
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=0)
