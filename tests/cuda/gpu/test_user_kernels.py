"""gp.ElementwiseKernel, gp.RawModule and gp.RawKernel on the GPU, checked against NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pygpukit as gp
import pytest
from pygpukit.testing import poison

pytestmark = pytest.mark.gpu

SQDIFF = gp.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "sqdiff")


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: object) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_allocating_call_matches_numpy(dtype: object) -> None:
    rng = np.random.default_rng(1)
    hx, hy = _rand(rng, (37, 129), dtype), _rand(rng, (37, 129), dtype)
    z = SQDIFF(gp.asarray(hx, device="cuda"), gp.asarray(hy, device="cuda"))
    assert z.dtype == np.dtype(dtype) and z.shape == hx.shape
    want = (hx.astype(np.float64) - hy) ** 2
    tol = 1e-6 if np.dtype(dtype).itemsize >= 4 else 2e-2
    np.testing.assert_allclose(z.to_numpy().astype(np.float64), want, rtol=tol, atol=tol)


def test_broadcast_strided_views_and_a_given_poisoned_output() -> None:
    rng = np.random.default_rng(2)
    hx = _rand(rng, (6, 10, 8), np.float32)
    hy = _rand(rng, (8,), np.float32)
    x = gp.asarray(hx, device="cuda")[::2, 1::3].transpose(1, 0, 2)  # strided, permuted
    y = gp.asarray(hy, device="cuda")
    out = poison(gp.empty(x.shape, dtype=gp.float32, device="cuda"))
    got = SQDIFF(x, y, out)
    assert got is out
    want = (hx[::2, 1::3].transpose(1, 0, 2) - hy) ** 2
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-6)


def test_scalar_arguments_take_the_array_type_or_numpys_default() -> None:
    rng = np.random.default_rng(3)
    hx = rng.integers(-50, 50, 1000).astype(np.int32)
    x = gp.asarray(hx, device="cuda")
    z = SQDIFF(x, 7)
    assert z.dtype == gp.int32
    np.testing.assert_array_equal(z.to_numpy(), (hx - 7) ** 2)
    scale = gp.ElementwiseKernel("float32 x, S s", "float32 z", "z = x * (float)s", "scale_by")
    hf = _rand(rng, (513,), np.float32)
    got = scale(gp.asarray(hf, device="cuda"), 0.25).to_numpy()
    np.testing.assert_allclose(got, hf * 0.25, rtol=1e-6)


def test_output_read_in_place_and_two_outputs() -> None:
    rng = np.random.default_rng(4)
    hx, hacc = _rand(rng, (300,), np.float32), _rand(rng, (300,), np.float32)
    acc = gp.asarray(hacc, device="cuda")
    axpy = gp.ElementwiseKernel("T x, float32 w", "T z", "z += x * w", "axpy_into")
    axpy(gp.asarray(hx, device="cuda"), 3.0, acc)
    np.testing.assert_allclose(acc.to_numpy(), hacc + 3 * hx, rtol=1e-5, atol=1e-6)
    split = gp.ElementwiseKernel("T x", "bool m, T r", "m = x > 0; r = m ? x : -x", "split")
    m, r = split(gp.asarray(hx, device="cuda"))
    np.testing.assert_array_equal(m.to_numpy(), hx > 0)
    np.testing.assert_array_equal(r.to_numpy(), np.abs(hx))


def test_raw_parameters_and_size_without_arrays() -> None:
    rng = np.random.default_rng(5)
    hx = _rand(rng, (1001,), np.float32)
    rev = gp.ElementwiseKernel("raw T x", "T y", "y = x[n - 1 - i]", "reverse")
    out = poison(gp.empty((1001,), dtype=gp.float32, device="cuda"))
    rev(gp.asarray(hx, device="cuda"), out)
    np.testing.assert_array_equal(out.to_numpy(), hx[::-1])
    iota = gp.ElementwiseKernel("", "int64 z", "z = i * 3", "iota3")
    np.testing.assert_array_equal(iota(size=77).to_numpy(), np.arange(77) * 3)


def test_bad_arguments_raise_before_launch() -> None:
    x32 = gp.asarray(np.ones(4, np.float32), device="cuda")
    x64 = gp.asarray(np.ones(4, np.float64), device="cuda")
    with pytest.raises(TypeError, match="is float64, but its type T is float32"):
        SQDIFF(x32, x64)
    with pytest.raises(TypeError, match="takes 2 inputs"):
        SQDIFF(x32)
    with pytest.raises(TypeError, match="host ndarray"):
        SQDIFF(x32, np.ones(4, np.float32))
    with pytest.raises(ValueError, match="cannot broadcast to the output shape"):
        SQDIFF(x32, x32, gp.empty((5,), dtype=gp.float32, device="cuda"))
    with pytest.raises(ValueError, match="outputs have shapes"):
        split = gp.ElementwiseKernel("T x", "T a, T b", "a = x; b = x", "split2")
        split(x32, gp.empty((4,), dtype=gp.float32, device="cuda"),
              gp.empty((2, 4), dtype=gp.float32, device="cuda"))  # fmt: skip
    with pytest.raises(ValueError, match="ElementwiseKernel runs on cuda"):
        SQDIFF(gp.asarray(np.ones(4, np.float32), device="cpu"), 1.0)
    free_t = gp.ElementwiseKernel("float32 x", "U z", "z = x", "untyped")
    with pytest.raises(TypeError, match="cannot tell the dtype of output"):
        free_t(x32)


MODULE = r"""
__device__ int pgk_test_counter;

extern "C" __global__ void bump(const int* values, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&pgk_test_counter, values[i]);
}

extern "C" __global__ void read_counter(int* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) { *out = pgk_test_counter; pgk_test_counter = 0; }
}
"""


def test_raw_module_functions_share_module_state() -> None:
    rng = np.random.default_rng(6)
    hv = rng.integers(-1000, 1000, 5000).astype(np.int32)
    mod = gp.RawModule(MODULE)
    bump, read = mod.get_function("bump"), mod.get_function("read_counter")
    out = poison(gp.empty((1,), dtype=gp.int32, device="cuda"))
    read(out, grid=1, block=1)  # resets the counter whatever it held
    bump(gp.asarray(hv, device="cuda"), hv.size)
    bump(gp.asarray(hv, device="cuda"), hv.size)
    read(out, grid=1, block=1)
    assert int(out.to_numpy()[0]) == 2 * int(hv.sum())


def test_raw_module_errors_name_the_problem() -> None:
    mod = gp.RawModule(MODULE)
    with pytest.raises(Exception, match="no_such_kernel"):
        mod.get_function("no_such_kernel")
    with pytest.raises(Exception, match="offending source line"):
        gp.RawModule('extern "C" __global__ void broken(int* x) { x[0] = undefined_name; }')
    with pytest.raises(TypeError, match="non-empty string"):
        gp.RawModule("")


def test_raw_kernel_is_one_function_of_a_module() -> None:
    src = 'extern "C" __global__ void twice(float* x, int n) {\n' \
          "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }"  # fmt: skip
    host = np.random.default_rng(7).standard_normal(999).astype(np.float32)
    x = gp.asarray(host, device="cuda")
    gp.RawKernel(src, "twice")(x, x.size)
    np.testing.assert_array_equal(x.to_numpy(), host * 2)
