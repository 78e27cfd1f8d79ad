"""The complex-as-planes ops on the host: the plane views (offsets, strides, dtypes), scalar
parts and operand mixes they hand the real kernels are checked by letting NumPy run each
real kernel on exactly those views (the kernels themselves are checked on the GPU, in
tests/cuda/gpu/test_cuda_complex.py). Also: the C of the complex-math kernels compiled by
the host's C++ compiler and compared with NumPy, special values included."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.backends.cpu.views import view

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import complex_math, complex_planes, provider
from pygpukit_cuda.kernels import source

_BINARY = {"add": np.add, "subtract": np.subtract, "atan2": np.arctan2, "hypot": np.hypot,
           "equal": np.equal, "not_equal": np.not_equal, "logical_and": np.logical_and,
           "logical_or": np.logical_or, "logical_xor": np.logical_xor}  # fmt: skip


def _value(x: Any, dtype: np.dtype) -> Any:
    return view(x).astype(dtype) if isinstance(x, gp.GPUArray) else dtype.type(x)


def _host_run(spec: source.KernelSpec, out: gp.GPUArray, inputs: list[Any]) -> None:
    """What the real kernel `spec` computes, done by NumPy on the same views."""
    compute = spec.inputs[-1].to_numpy_dtype()
    args = [_value(x, d.to_numpy_dtype()) for x, d in zip(inputs, spec.inputs, strict=True)]
    name = spec.name
    if name.startswith("pgk_where_"):
        result = np.where(args[0].astype(bool), args[1], args[2])
    elif name.startswith("pgk_negative_"):
        result = np.negative(args[0])
    elif name.startswith("pgk_logical_not_"):
        result = np.logical_not(args[0])
    else:
        op = re.match(r"pgk_(\w+?)_(bool|float32|float64)_", name)
        assert op is not None, name
        with np.errstate(all="ignore"):
            result = _BINARY[op.group(1)](*[a.astype(compute) for a in args])
    view(out)[...] = result


@pytest.fixture(autouse=True)
def host_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider, "run", _host_run)

    def copy(src: gp.GPUArray, out: gp.GPUArray) -> None:
        want = out.dtype.to_numpy_dtype()
        view(out)[...] = view(src) != 0 if want == np.bool_ else view(src).astype(want)

    monkeypatch.setattr(provider, "copy", copy)
    monkeypatch.setattr(provider, "fill", lambda out, v: view(out).__setitem__(..., v))


RNG = np.random.default_rng(9)


def _c(shape: tuple[int, ...], dtype: type = np.complex64) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _cpu(a: np.ndarray) -> gp.GPUArray:
    return gp.asarray(a, device="cpu")


def _out(shape: tuple[int, ...], dtype: Any) -> gp.GPUArray:
    return gp.empty(shape, dtype=dtype, device="cpu")


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_parts_casts_fill_and_unary(dtype: type) -> None:
    a = _c((4, 6), dtype)
    x = _cpu(a)
    t = x.mT  # a strided view
    real = gp.float32 if dtype is np.complex64 else gp.float64
    for fn, want, out_dtype in (
        (complex_planes.real, a.T.real, real), (complex_planes.imag, a.T.imag, real),
        (complex_planes.conj, np.conj(a.T), x.dtype), (complex_planes.angle, np.angle(a.T), real),
    ):  # fmt: skip
        out = _out((6, 4), out_dtype)
        fn(t, out)
        np.testing.assert_allclose(view(out), want, rtol=1e-6)
    out = _out((6, 4), real)
    complex_planes.unary("abs", t, out)
    np.testing.assert_allclose(view(out), np.abs(a.T), rtol=1e-6)
    neg = _out((6, 4), x.dtype)
    complex_planes.unary("negative", t, neg)
    np.testing.assert_array_equal(view(neg), -a.T)
    filled = _out((3,), x.dtype)
    complex_planes.fill(filled, 2 - 5j)
    np.testing.assert_array_equal(view(filled), np.full(3, 2 - 5j, dtype))
    ints = _cpu(np.arange(5, dtype=np.int32))
    cast = _out((5,), x.dtype)
    complex_planes.copy(ints, cast)
    np.testing.assert_array_equal(view(cast), np.arange(5).astype(dtype))
    flags = _cpu(np.array([0, 1j, complex(np.nan, 0), -0.0, 3], dtype=dtype))
    b = _out((5,), gp.bool)
    complex_planes.copy(flags, b)
    np.testing.assert_array_equal(view(b), [False, True, True, False, True])
    with pytest.raises(TypeError, match="complex to real"):
        complex_planes.copy(x, _out((4, 6), real))


def test_binary_with_scalars_real_operands_and_mixed_precision() -> None:
    a, b = _c((3, 4)), _c((3, 4), np.complex128)
    x, y = _cpu(a), _cpu(b)
    r = RNG.standard_normal((3, 4)).astype(np.float32)
    for op, fn in (("add", np.add), ("subtract", np.subtract)):
        out = _out((3, 4), gp.complex128)
        complex_planes.binary(op, x, y, out, gp.complex128)
        np.testing.assert_allclose(view(out), fn(a.astype(np.complex128), b), rtol=1e-6)
        out = _out((3, 4), gp.complex64)
        complex_planes.binary(op, 1.5 - 2j, x, out, gp.complex64)
        np.testing.assert_allclose(view(out), fn(np.complex64(1.5 - 2j), a), rtol=1e-6)
        complex_planes.binary(op, x, _cpu(r), out, gp.complex64)
        np.testing.assert_allclose(view(out), fn(a, r), rtol=1e-6)
    c = a.copy()
    c[::2, 1] += 1j
    c[1, 2] = complex(np.nan, 0)
    for op, fn in (("equal", np.equal), ("not_equal", np.not_equal)):
        out = _out((3, 4), gp.bool)
        complex_planes.binary(op, x, _cpu(c), out, gp.complex64)
        np.testing.assert_array_equal(view(out), fn(a, c))


def test_logical_ops_and_truth_reductions_use_either_part() -> None:
    a = np.array([0, 1j, 2, 0, complex(np.nan, 0)], dtype=np.complex64)
    b = np.array([1, 0, 0j, 0, 1], dtype=np.complex64)
    for op, fn in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)):  # fmt: skip
        out = _out((5,), gp.bool)
        complex_planes.binary(op, _cpu(a), _cpu(b), out, gp.complex64)
        np.testing.assert_array_equal(view(out), fn(a, b))
        complex_planes.binary(op, _cpu(a), 0j, out, gp.complex64)
        np.testing.assert_array_equal(view(out), fn(a, 0j))
    out = _out((5,), gp.bool)
    complex_planes.unary("logical_not", _cpu(a), out)
    np.testing.assert_array_equal(view(out), np.logical_not(a))

    def real_any(x: gp.GPUArray, o: gp.GPUArray, axes: tuple[int, ...]) -> None:
        view(o)[...] = view(x).any(axis=axes, keepdims=True)

    flag = _out((1,), gp.bool)
    complex_planes.reduction("any", real_any)(_cpu(a[[0, 3]]), flag, (0,))
    assert not view(flag)[0]
    complex_planes.reduction("any", real_any)(_cpu(a), flag, (0,))
    assert view(flag)[0]


def test_where_sum_of_parts() -> None:
    a, b = _c((5,)), _c((5,))
    cond = np.array([True, False, True, True, False])
    out = _out((5,), gp.complex64)
    complex_planes.where(_cpu(cond), _cpu(a), 3j, out)
    np.testing.assert_array_equal(view(out), np.where(cond, a, np.complex64(3j)))

    def real_sum(x: gp.GPUArray, o: gp.GPUArray, axes: tuple[int, ...]) -> None:
        view(o)[...] = view(x).sum(axis=axes, keepdims=True)

    total = _out((1,), gp.complex64)
    complex_planes.reduction("sum", real_sum)(_cpu(b), total, (0,))
    np.testing.assert_allclose(view(total), [b.sum()], rtol=1e-6)


# -- the C of complex_math, on the host ---------------------------------------------------
_HARNESS = r"""
#include <cmath>
#include <cstdio>
using std::fabs; using std::sqrt; using std::hypot; using std::copysign; using std::log;
using std::log1p; using std::expm1; using std::exp; using std::sin; using std::cos;
using std::atan2; using std::sinh; using std::cosh; using std::tan;
#define __device__
#define __forceinline__
%s
int main() {
  double re, im, bre, bim;
  while (std::scanf("%%lf %%lf %%lf %%lf", &re, &im, &bre, &bim) == 4) {
    pgk_cx_double a{re, im}, b{bre, bim};
    pgk_cx_double d = pgk_cx_div(a, b), s = pgk_cx_sqrt(a), m = pgk_cx_mul(a, b);
    pgk_cx_double g = pgk_cx_sign(a), l = pgk_cx_log1p(a), e = pgk_cx_expm1(a);
    pgk_cx_double sh = pgk_cx_sinh(a), ch = pgk_cx_cosh(a), sn = pgk_cx_sin(a), cs = pgk_cx_cos(a);
    pgk_cx_double th = pgk_cx_tanh(a), tn = pgk_cx_tan(a), ex = pgk_cx_exp(a);
    std::printf("%%.17g %%.17g %%.17g %%.17g %%.17g %%.17g %%.17g %%.17g", d.re, d.im, s.re,
                s.im, m.re, m.im, g.re, g.im);
    std::printf(" %%.17g %%.17g %%.17g %%.17g", l.re, l.im, e.re, e.im);
    std::printf(" %%.17g %%.17g %%.17g %%.17g %%.17g %%.17g %%.17g %%.17g", sh.re, sh.im, ch.re,
                ch.im, sn.re, sn.im, cs.re, cs.im);
    std::printf(" %%.17g %%.17g %%.17g %%.17g %%.17g %%.17g\n", th.re, th.im, tn.re, tn.im, ex.re,
                ex.im);
  }
}
"""


def _tanh(z: np.ndarray) -> np.ndarray:
    """NumPy's tanh with the standard's +-1 + 0i (sign of y) for an infinite real part."""
    out = np.tanh(z)
    edge = np.isinf(z.real)
    out.real[edge] = np.sign(z.real[edge])
    out.imag[edge] = np.copysign(0.0, z.imag[edge])
    return out


def _tan(a: np.ndarray) -> np.ndarray:
    """tan z = -i tanh(iz), the parts moved exactly (complex products would make NaNs of
    infinite parts)."""
    iz = np.empty_like(a)
    iz.real, iz.imag = -a.imag, a.real
    h = _tanh(iz)
    out = np.empty_like(h)
    out.real, out.imag = h.imag, -h.real
    return out


def test_complex_math_formulas_match_numpy(tmp_path: Path) -> None:
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    _, src, _ = complex_math._kernel("divide", gp.complex128)
    helpers = src[
        src.index("struct pgk_cx_double") : src.index(
            'extern "C"', src.index("struct pgk_cx_double")
        )
    ]
    (tmp_path / "h.cpp").write_text(_HARNESS % helpers)
    subprocess.run([cxx, "-O1", "-o", str(tmp_path / "h"), str(tmp_path / "h.cpp")], check=True)
    specials = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e300, 4e-310, 800.0, 1e-300]
    a = np.array([complex(x, y) for x in specials for y in specials])
    b = a[RNG.permutation(a.size)]
    a = np.concatenate([a, _c((50,), np.complex128)])
    b = np.concatenate([b, _c((50,), np.complex128)])
    rows = [
        " ".join(repr(float(v)) for v in (p.real, p.imag, q.real, q.imag))
        for p, q in zip(a, b, strict=True)
    ]
    done = subprocess.run([str(tmp_path / "h")], input="\n".join(rows) + "\n",
                          capture_output=True, text=True, check=True)  # fmt: skip
    got = np.array([[float(v) for v in row.split()] for row in done.stdout.splitlines()])
    with np.errstate(all="ignore"):
        want_div, want_sqrt, want_mul, want_sign = a / b, np.sqrt(a), a * b, np.sign(a)
        finite = np.isfinite(a)  # NumPy's own complex log1p/expm1 are checked where finite
        want_log1p = np.where(finite, np.log1p(a), np.nan)
        want_expm1 = np.where(finite, np.expm1(a), np.exp(a) - 1)
        trig = [np.sinh(a), np.cosh(a), np.sin(a), np.cos(a), _tanh(a), _tan(a)]
    columns = ((0, want_div), (2, want_sqrt), (4, want_mul), (6, want_sign), (8, want_log1p),
               (10, want_expm1), (12, trig[0]), (14, trig[1]), (16, trig[2]), (18, trig[3]),
               (20, trig[4]), (22, trig[5]), (24, np.exp(a)))  # fmt: skip
    for k, want in columns:
        g = np.empty(len(got), dtype=np.complex128)  # parts set apart: 1j * inf is nan + infj
        g.real, g.imag = got[:, k], got[:, k + 1]
        keep = np.ones(len(g), dtype=bool)
        if k in (8, 10):  # overflowing |z| aside; non-finite expm1 is exp(z) - 1
            keep = (np.abs(a) < 700) & (finite if k == 8 else True)
        if k == 4:  # products that overflow differ with fused multiply-adds (NumPy's SIMD
            # loops and the GPU contract a*b - c*d into one): compare the others
            huge = np.abs(np.stack([a.real, a.imag, b.real, b.imag])) == 1e300
            keep = ~huge.any(axis=0)
        np.testing.assert_allclose(g[keep], want[keep], rtol=1e-13, atol=1e-300, equal_nan=True,
                                   err_msg=f"column {k}")  # fmt: skip


@pytest.mark.parametrize("arch", [80, 90])
def test_complex_and_fft_kernels_compile_to_cubin(arch: int) -> None:
    from pygpukit_cuda import _loader, compiler, fft_kernels

    if not _loader.is_nvrtc_available():
        pytest.skip("no NVRTC: pip install nvidia-cuda-nvrtc")
    target = compiler.Target(arch, cubin=True)
    for name, src, _ in complex_math.sources():
        assert compiler.compile_source(src, name, target, use_cache=False).data
    for name in ("pgk_fft_scale_f32", "pgk_fft_scale_f64"):
        image = compiler.compile_source(fft_kernels._SCALE_SOURCE, name, target, use_cache=False)
        assert image.data


def test_cumulative_sum_of_parts() -> None:
    a = _c((3, 4))

    def real_scan(x: gp.GPUArray, o: gp.GPUArray, axis: int, include_initial: bool) -> None:
        done = np.cumsum(view(x), axis=axis)
        if include_initial:
            done = np.concatenate([np.zeros_like(done[:1]), done], axis=axis)
        view(o)[...] = done

    out = _out((4, 4), gp.complex64)
    complex_planes.scan(real_scan)(_cpu(a), out, 0, True)
    np.testing.assert_allclose(view(out)[1:], np.cumsum(a, axis=0), rtol=1e-6)
    assert not view(out)[0].any()


def test_prod_arranges_rows_for_its_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """complex_math.prod on the host: the kernel's (rows, m) block and its launch are what
    NumPy multiplies here (the kernel itself runs in the GPU tests)."""
    import ctypes

    from pygpukit_cuda import launcher

    class _Fn:
        def __init__(self, name: str) -> None:
            self.dtype = np.complex128 if name.endswith("complex128") else np.complex64

        def launch(self, grid: tuple[int], block: tuple[int], args: tuple[int, ...]) -> None:
            out_ptr, x_ptr, m = args
            rows = grid[0]
            size = np.dtype(self.dtype).itemsize
            x = np.frombuffer((ctypes.c_char * (rows * m * size)).from_address(x_ptr),
                              self.dtype).reshape(rows, m)  # fmt: skip
            out = np.frombuffer((ctypes.c_char * (rows * size)).from_address(out_ptr),
                                self.dtype)  # fmt: skip
            out[...] = x.prod(axis=1)

    monkeypatch.setattr(launcher, "function", lambda index, name, src, fmt: _Fn(name))
    a = _c((3, 4, 5), np.complex128)
    for axes in ((0,), (1, 2), (2, 0), (0, 1, 2)):
        shape = tuple(1 if d in axes else a.shape[d] for d in range(3))
        out = _out(shape, gp.complex128)
        complex_math.prod(_cpu(a), out, axes)
        np.testing.assert_allclose(view(out), a.prod(axis=axes, keepdims=True), rtol=1e-12)
    out = _out((1, 1), gp.complex64)
    complex_math.prod(_cpu(np.zeros((0, 3), np.complex64)), out, (0, 1))
    np.testing.assert_array_equal(view(out), [[1 + 0j]])


def test_nonzero_mask_assign_and_linspace_of_parts() -> None:
    """The wrappers hand the real kernels truth values, part planes and part values."""
    a = np.array([[0, 1j, 2], [0, complex(np.nan, 0), -0.0]], dtype=np.complex64)
    seen = complex_planes.nonzero(lambda x: np.nonzero(view(x)))(_cpu(a))
    np.testing.assert_array_equal(seen, np.nonzero(a))

    def real_assign(x: gp.GPUArray, mask: gp.GPUArray, value: Any) -> None:
        target = view(x)
        target[view(mask)] = view(value) if isinstance(value, gp.GPUArray) else value

    assign = complex_planes.mask_assign(real_assign)
    mask = np.array([[True, False, True], [False, True, False]])
    x = _cpu(a.copy())
    assign(x, _cpu(mask), 3 - 4j)
    want = a.copy()
    want[mask] = 3 - 4j
    np.testing.assert_array_equal(view(x), want)
    values = _c((3,))
    assign(x, _cpu(mask), _cpu(values))
    want[mask] = values
    np.testing.assert_array_equal(view(x), want)
    reals = RNG.standard_normal(3).astype(np.float32)
    assign(x, _cpu(mask), _cpu(reals))  # a real value: imaginary parts become 0
    want[mask] = reals
    np.testing.assert_array_equal(view(x), want)

    def real_linspace(out: gp.GPUArray, start: Any, stop: Any, step: Any, end: bool) -> None:
        view(out)[...] = start + np.arange(out.shape[0]) * step

    out = _out((5,), gp.complex128)
    complex_planes.linspace(real_linspace)(out, 1 - 1j, 3 + 1j, 0.5 + 0.5j, True)
    np.testing.assert_allclose(view(out), np.linspace(1 - 1j, 3 + 1j, 5), rtol=1e-15)
