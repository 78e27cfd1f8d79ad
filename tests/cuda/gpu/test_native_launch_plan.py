"""The native LaunchPlan on the GPU: a kernel echoes its parameter bytes back, so every
slot code is checked against the Python twin's packing; bad calls and driver failures raise
Python exceptions naming the problem."""

from __future__ import annotations

import struct

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.testing import poison
from pygpukit_cuda import _native as native
from pygpukit_cuda import launcher
from pygpukit_cuda.launch_plan import PackedLaunch

pytestmark = pytest.mark.gpu

ECHO = r"""
struct PgkBlob { unsigned char b[56]; };
extern "C" __global__ void pgk_echo(unsigned char* out, PgkBlob blob) {
    int i = threadIdx.x;
    if (i < 56) out[i] = blob.b[i];
}
"""
# every code at a naturally aligned offset inside the blob (bytes 8..63 of the parameters)
SLOTS = [(8, "P"), (16, "?"), (17, "b"), (18, "h"), (20, "i"), (24, "q"), (32, "f"),
         (36, "I"), (40, "d"), (48, "Q"), (56, "B"), (58, "H")]  # fmt: skip


def _values(rng: np.random.Generator) -> list[object]:
    big = int(rng.integers(0, 2**62)) * 3  # past 2^63 at times: wraps as a C cast
    return [
        int(rng.integers(1, 2**48)), bool(rng.integers(0, 2)), int(rng.integers(-300, 300)),
        int(rng.integers(-(2**15), 2**15)), int(rng.integers(-(2**40), 2**40)), -big,
        float(rng.standard_normal()) * 1e3, int(rng.integers(-(2**31), 2**32)),
        float(rng.standard_normal()), big, int(rng.integers(-200, 300)),
        float(rng.uniform(0, 70000)),
    ]  # fmt: skip


def _echo() -> launcher.Function:
    return launcher.function(0, "pgk_echo", ECHO, "@Q56s")


def test_every_slot_code_packs_as_the_python_twin() -> None:
    rng = np.random.default_rng()
    fn = _echo()
    out = poison(gp.empty((56,), dtype=gp.uint8, device="cuda"))
    for _ in range(20):
        template = struct.pack("@Q", out.buffer.ptr) + rng.integers(0, 256, 56, np.uint8).tobytes()
        values = _values(rng)
        plan = fn.context.launch_plan(fn.handle, 1, 64, 0, template, SLOTS)
        plan(0, *values)
        want = PackedLaunch(None, fn.handle, 1, 64, 0, template, SLOTS).pack(*values)
        assert out.to_numpy().tobytes() == bytes(want[8:]), values


def test_bad_plans_and_calls_raise_before_the_driver() -> None:
    fn = _echo()
    params = bytes(64)
    with pytest.raises(ValueError, match="slot at byte 60 \\('q'\\) does not fit aligned"):
        fn.context.launch_plan(fn.handle, 1, 64, 0, params, [(60, "q")])
    with pytest.raises(ValueError, match="unknown launch plan slot code 'z'"):
        fn.context.launch_plan(fn.handle, 1, 64, 0, params, [(8, "z")])
    with pytest.raises(ValueError, match="kernels take at most 4096"):
        fn.context.launch_plan(fn.handle, 1, 64, 0, bytes(5000), [])
    plan = fn.context.launch_plan(fn.handle, 1, 64, 0, params, [(8, "P"), (16, "f")])
    assert "2 values, 64 parameter bytes" in repr(plan)
    with pytest.raises(TypeError, match="takes the stream and 2 values \\(2 arguments given\\)"):
        plan(0, 1)
    with pytest.raises(TypeError, match="no keyword arguments"):
        plan(0, 1, 2.0, stream=0)
    with pytest.raises(TypeError, match="device pointer and must be an int, not float"):
        plan(0, 1.0, 2.0)
    with pytest.raises(TypeError, match="must be real number, not str"):
        plan(0, 1, "x")


def test_a_driver_refusal_raises_cuda_error_naming_the_call() -> None:
    fn = _echo()
    out = gp.empty((56,), dtype=gp.uint8, device="cuda")
    params = struct.pack("@Q", out.buffer.ptr) + bytes(56)
    plan = fn.context.launch_plan(fn.handle, 1, 4096, 0, params, [])  # over 1024 threads
    with pytest.raises(native.CudaError, match="cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE"):
        plan(0)
    gp.cuda.synchronize()  # not sticky: the device still works
    np.testing.assert_array_equal((gp.ones(3, device="cuda") + 1).to_numpy(), [2, 2, 2])
