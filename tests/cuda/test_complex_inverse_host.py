"""The C of the cuda complex inverse functions and pow, compiled by the host's C++ compiler
(double and float flavours) and compared with NumPy's complex128 results: hypothesis over
magnitudes from 1e-300 to 1e300, points on and beside the branch cuts, and every pair of
special parts (NaN, +-inf, signed zeros, huge, tiny) with the signs of zeros checked."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import complex_math

OPS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "asinh": np.arcsinh, "asin": np.arcsin, "acosh": np.arccosh, "acos": np.arccos,
    "atanh": np.arctanh, "atan": np.arctan,
}  # fmt: skip
_PROGRAM = r"""
#include <cmath>
#include <cstdio>
using namespace std;
#define __device__
#define __forceinline__
%s
int main() {
  double re, im, bre, bim;
  while (std::scanf("%%lf %%lf %%lf %%lf", &re, &im, &bre, &bim) == 4) {
    CX a{(R)re, (R)im}, b{(R)bre, (R)bim}, o;
%s
    o = pgk_cx_pow(a, b); std::printf(" %%.17g %%.17g\n", (double)o.re, (double)o.im);
  }
}
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The helpers of complex_math's kernels as host programs, one per part type: each
    reads a b pairs and prints every op of a, then a ** b."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    where = tmp_path_factory.mktemp("cx_inverse")
    built = {}
    for dtype in (gp.complex64, gp.complex128):
        part = "double" if dtype is gp.complex128 else "float"
        _, src, _ = complex_math._kernel("divide", dtype)
        start = src.index(f"struct pgk_cx_{part}")
        helpers = src[start : src.index('extern "C"', start)]
        calls = "\n".join(
            f'    o = pgk_cx_{op}(a); std::printf(" %.17g %.17g", (double)o.re, (double)o.im);'
            for op in OPS
        )
        text = (_PROGRAM % (helpers, calls)).replace("(R)", f"({part})")
        (where / f"{part}.cpp").write_text(text.replace("CX", f"pgk_cx_{part}"))
        exe = where / part
        subprocess.run([cxx, "-O1", "-o", str(exe), str(where / f"{part}.cpp")], check=True)
        built[dtype.name] = exe
    return built


def _run(exe: Path, a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    rows = "".join(
        f"{float(p.real)!r} {float(p.imag)!r} {float(q.real)!r} {float(q.imag)!r}\n"
        for p, q in zip(a, b, strict=True)
    )
    done = subprocess.run([str(exe)], input=rows, capture_output=True, text=True, check=True)
    got = np.array([[float(v) for v in row.split()] for row in done.stdout.splitlines()])
    out = {}
    for k, op in enumerate([*OPS, "pow"]):
        z = np.empty(len(a), np.complex128)  # parts set apart: complex products lose them
        z.real, z.imag = got[:, 2 * k], got[:, 2 * k + 1]
        out[op] = z
    return out


def _close_partwise(got: np.ndarray, want: np.ndarray, rtol: float, msg: str) -> None:
    """Each part within rtol of the reference's magnitude |want| (a part far smaller than
    the other is judged against |want|: its own relative error means nothing there), or
    within a few steps of float32's subnormals (whose spacing is absolute)."""
    scale = np.abs(want)
    for part in ("real", "imag"):
        g, w = getattr(got, part), getattr(want, part)
        both_nan = np.isnan(g) & np.isnan(w)
        same_inf = np.isinf(w) & (g == w)
        near = np.abs(g - w) <= rtol * np.maximum(np.abs(w), scale) + (1e-44 if rtol > 1e-9 else 0)
        bad = ~(both_nan | same_inf | near)
        assert not bad.any(), f"{msg} {part}: {got[bad][:5]} != {want[bad][:5]}"


_RTOL = {"complex128": 4e-15, "complex64": 1e-6}


def _points_near_cuts(rng: np.random.Generator, n: int) -> np.ndarray:
    """Points on the cuts of the six functions (|real| > 1 on the real axis, |imag| > 1 on
    the imaginary axis) with +-0 and tiny off-axis parts, and points hugging z = +-1, +-i."""
    side = rng.choice([0.0, -0.0, 1e-300, -1e-300, 1e-20, -1e-30], n)
    far = (1 + 10.0 ** rng.uniform(-12, 6, n)) * rng.choice([-1.0, 1.0], n)
    close = (1 + 10.0 ** rng.uniform(-14, -1, n) * rng.choice([-1.0, 1.0], n)) * rng.choice(
        [-1.0, 1.0], n
    )
    real_axis = far + 0j
    real_axis.imag = side
    imag_axis = side + 0j
    imag_axis.imag = far
    hug = close + 0j
    hug.imag = 10.0 ** rng.uniform(-300, -1, n) * rng.choice([-1.0, 1.0], n)
    hug_i = hug.imag + 0j
    hug_i.imag = close
    return np.concatenate([real_axis, imag_axis, hug, hug_i])


def _normal_float32(a: np.ndarray) -> np.ndarray:
    """a with float32-subnormal parts made zero: the square roots inside the kernels halve
    their argument, which drops a bit of a subnormal float (1e-3 relative, near z = 1)."""
    out = a.astype(np.complex64).astype(np.complex128)
    tiny = np.finfo(np.float32).tiny
    out.real[np.abs(out.real) < tiny] = 0.0
    out.imag[np.abs(out.imag) < tiny] = 0.0
    return out


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_near_cuts_and_over_magnitudes(programs: dict[str, Path], dtype: str) -> None:
    rng = np.random.default_rng(12)
    wide = 10.0 ** rng.uniform(-300, 300, (2, 3000)) * rng.choice([-1.0, 1.0], (2, 3000))
    a = np.concatenate([wide[0] + 1j * wide[1], _points_near_cuts(rng, 400),
                        rng.standard_normal(500) + 1j * rng.standard_normal(500)])  # fmt: skip
    if dtype == "complex64":  # float inputs (the reference takes the rounded values)
        a = _normal_float32(a[np.abs(a) < 1e38])
    a = a.astype(dtype)
    a = a.astype(np.complex128)
    got = _run(programs[dtype], a, a)
    with np.errstate(all="ignore"):
        for op, ref in OPS.items():
            want = ref(a)
            keep = np.isfinite(want)  # atanh(+-1) is the one pole reached (inf, checked below)
            _close_partwise(got[op][keep], want[keep], _RTOL[dtype], f"{op} {dtype}")


def _on_an_axis(along: float, off: float, imaginary_axis: bool) -> complex:
    return complex(off, along) if imaginary_axis else complex(along, off)


#: points of the plane, and points on or beside the cuts: a part beyond +-1 (or near it) on
#: one axis, the other part a signed zero or tiny
POINTS = st.one_of(
    st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e300),
    st.builds(
        _on_an_axis,
        st.one_of(st.floats(1.0, 1e300), st.floats(-1e300, -1.0), st.floats(0.999, 1.001)),
        st.sampled_from([0.0, -0.0, 1e-300, -1e-300, 1e-20, -1e-12]),
        st.booleans(),
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(POINTS, min_size=1, max_size=20), st.sampled_from(["complex128", "complex64"]))
def test_hypothesis_values(programs: dict[str, Path], values: list[complex], dtype: str) -> None:
    a = np.array(values, dtype=np.complex128)
    if dtype == "complex64":
        a = _normal_float32(a[np.abs(a) < 1e38])
    if a.size == 0:
        return
    got = _run(programs[dtype], a, a)
    with np.errstate(all="ignore"):
        for op, ref in OPS.items():
            want = ref(a)
            keep = np.isfinite(want)
            _close_partwise(got[op][keep], want[keep], _RTOL[dtype], f"{op} {dtype}")


_SPECIAL_PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, np.inf, -np.inf, np.nan,
                  1e300, -1e300, 1e-300, 3e9]  # fmt: skip


def test_special_values_and_signed_zeros_match_numpy(programs: dict[str, Path]) -> None:
    """Every pair of special parts: NaNs, infinities and zeros (with their signs) exactly
    as NumPy gives them, which is the Array API's (C99 Annex G) table for these functions."""
    n = len(_SPECIAL_PARTS)
    a = np.empty(n * n, np.complex128)
    a.real, a.imag = np.repeat(_SPECIAL_PARTS, n), np.tile(_SPECIAL_PARTS, n)
    got = _run(programs["complex128"], a, a)
    with np.errstate(all="ignore"):
        for op, ref in OPS.items():
            want = ref(a)
            for part in ("real", "imag"):
                g, w = getattr(got[op], part), getattr(want, part)
                same = (np.isnan(g) & np.isnan(w)) | (
                    np.isclose(g, w, rtol=1e-14, atol=0)
                    & ((g != 0) | (np.signbit(g) == np.signbit(w)))
                )
                assert same.all(), (
                    f"{op} {part} at {a[~same][:4]}: {g[~same][:4]} vs {w[~same][:4]}"
                )


def test_standard_table_entries(programs: dict[str, Path]) -> None:
    """A few rows of the standard's special-case tables, spelled out (independent of NumPy)."""
    inf, nan, pi = np.inf, np.nan, np.pi
    rows = [  # (op, a, b, real, imag); None: sign unspecified, compare magnitudes
        ("acosh", 0.0, 0.0, 0.0, pi / 2), ("acosh", -inf, 1.5, inf, pi),
        ("acosh", -inf, inf, inf, 3 * pi / 4), ("acosh", nan, inf, inf, nan),
        ("acos", -0.0, nan, pi / 2, nan), ("acos", inf, 1.5, 0.0, -inf),
        ("acos", nan, inf, nan, -inf), ("asinh", inf, inf, inf, pi / 4),
        ("asinh", nan, 0.0, nan, 0.0), ("atanh", 1.0, 0.0, inf, 0.0),
        ("atanh", 1.5, inf, 0.0, pi / 2), ("atanh", inf, nan, 0.0, nan),
        ("atanh", 0.0, nan, 0.0, nan),
    ]  # fmt: skip
    a = np.empty(len(rows), np.complex128)
    a.real, a.imag = [r[1] for r in rows], [r[2] for r in rows]
    got = _run(programs["complex128"], a, a)
    for i, (op, x, y, re, im) in enumerate(rows):
        z = got[op][i]
        for g, w in ((z.real, re), (z.imag, im)):
            if np.isnan(w):
                assert np.isnan(g), f"{op}({x}, {y}) = {z}"
            else:
                assert g == pytest.approx(w, rel=1e-15) and np.signbit(g) == np.signbit(w), (
                    f"{op}({x}, {y}) = {z}, want ({re}, {im})"
                )


def test_pow_matches_numpy(programs: dict[str, Path]) -> None:
    """exp(b log a) in general; NumPy's rules for a zero exponent (1), a zero base (0 when
    Re b > 0, else NaN) and small integral exponents (repeated products)."""
    rng = np.random.default_rng(5)
    n = 2000
    a = rng.uniform(0.05, 4, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    b = rng.standard_normal(n) * 3 + 1j * rng.standard_normal(n)
    b[::3] = np.round(b[::3].real * 10)  # integral exponents, within and past |n| < 100
    b[1::7] = 0
    a[2::11] = 0
    b[2::22] = -1.5 + 1j
    a[3::13] = rng.choice([-2.0, 3.0, -0.5], a[3::13].size)  # real bases: the log's cut
    for dtype, rtol in (("complex128", 1e-12), ("complex64", 2e-5)):
        x = a.astype(dtype).astype(np.complex128)
        y = b.astype(dtype).astype(np.complex128)
        got = _run(programs[dtype], x, y)["pow"]
        with np.errstate(all="ignore"):
            want = x**y
        fits = ~(np.abs(want) > np.finfo(dtype).max / 4)  # overflowing results aside
        _close_partwise(got[fits], want[fits], rtol, f"pow {dtype}")
    exact = _run(programs["complex128"], np.array([1 + 1j, 2 - 1j]), np.array([2.0, 3.0]))
    np.testing.assert_array_equal(exact["pow"], [2j, (2 - 1j) ** 3])
