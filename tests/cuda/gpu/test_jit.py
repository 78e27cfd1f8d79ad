"""gp.jit on the GPU: the seed example, argument checks, compile errors, launch options."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit_cuda.compiler import CompileError

pytestmark = pytest.mark.gpu

SEED = """
extern "C" __global__
void scale(float* x, float factor, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) x[idx] *= factor;
}
"""


def test_seed_example_exactly_as_written() -> None:
    host = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    x = gp.from_numpy(host)
    assert gp.is_nvrtc_available()
    kernel = gp.jit(SEED, func="scale")
    kernel(x, factor=0.5, n=x.size)
    np.testing.assert_array_equal(x.to_numpy(), host * np.float32(0.5))


def test_arguments_are_checked_before_launch() -> None:
    kernel = gp.jit(SEED, func="scale")
    x = gp.asarray(np.ones(8, np.float32), device="cuda")
    with pytest.raises(TypeError, match="missing argument"):
        kernel(x, 0.5)
    with pytest.raises(TypeError, match="float\\* but the array is int32"):
        kernel(gp.asarray(np.ones(8, np.int32), device="cuda"), 0.5, 8)
    with pytest.raises(TypeError, match="pass an int"):
        kernel(x, 0.5, 8.0)
    with pytest.raises(TypeError, match="has no parameter"):
        kernel(x, 0.5, 8, scale=2)
    with pytest.raises(ValueError, match="strided view"):
        kernel(gp.asarray(np.ones(16, np.float32), device="cuda")[::2], 0.5, 8)
    np.testing.assert_array_equal(x.to_numpy(), np.ones(8, np.float32))  # nothing ran


def test_compile_error_shows_log_and_line() -> None:
    bad = 'extern "C" __global__ void oops(float* x) {\n  x[0] = nope;\n}\n'
    with pytest.raises(CompileError) as info:
        gp.jit(bad, func="oops")
    assert "line 2: x[0] = nope;" in str(info.value)
    assert 'identifier "nope" is undefined' in str(info.value)


def test_grid_block_shared_memory_stream_and_several_types() -> None:
    from pygpukit_cuda import _loader
    from pygpukit_cuda.device import context

    src = r"""
    extern "C" __global__ void fill2d(double* out, long long cols, double base, bool neg) {
        extern __shared__ double tile[];
        tile[threadIdx.x] = base + blockIdx.x * cols + threadIdx.x;
        __syncthreads();
        out[blockIdx.x * cols + threadIdx.x] = neg ? -tile[threadIdx.x] : tile[threadIdx.x];
    }
    """
    k = gp.jit(src, func="fill2d")
    out = gp.empty((4, 32), dtype="float64", device="cuda")
    stream = _loader.driver().Stream(context(0), priority=0)
    k(out, 32, np.float64(10.0), True, grid=4, block=32, shared_mem=32 * 8, stream=stream)
    stream.synchronize()
    want = -(10.0 + np.arange(128, dtype=np.float64).reshape(4, 32))
    np.testing.assert_array_equal(out.to_numpy(), want)
