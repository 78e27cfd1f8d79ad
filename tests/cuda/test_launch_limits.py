"""Launch-limit checks over synthetic limit records (no GPU), and the lost-context error type."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pygpukit_cuda import errors
from pygpukit_cuda.launch_limits import (
    DeviceLimits,
    FunctionLimits,
    check_launch,
    needs_optin,
    normalize_dims,
)

H100 = DeviceLimits(
    device="cuda:0",
    max_threads_per_block=1024,
    max_block=(1024, 1024, 64),
    max_grid=(2**31 - 1, 65535, 65535),
    shared_per_block=48 * 1024,
    shared_per_block_optin=227 * 1024,
)


def fn(max_threads: int = 1024, static: int = 0) -> FunctionLimits:
    return FunctionLimits("k", max_threads, static, 48 * 1024 - static)


def test_normalize_dims_pads_and_rejects() -> None:
    assert normalize_dims(7, "grid") == (7, 1, 1)
    assert normalize_dims(np.int64(3), "grid") == (3, 1, 1)
    assert normalize_dims((2, 3), "block") == (2, 3, 1)
    assert normalize_dims([2, 3, 4], "block") == (2, 3, 4)
    with pytest.raises(ValueError, match=r"block\.y = 0"):
        normalize_dims((4, 0), "block")
    with pytest.raises(ValueError, match=r"grid\.x = -1"):
        normalize_dims(-1, "grid")
    with pytest.raises(ValueError, match="1 to 3 sizes"):
        normalize_dims((1, 1, 1, 1), "grid")
    with pytest.raises(ValueError, match="1 to 3 sizes"):
        normalize_dims((), "grid")
    with pytest.raises(TypeError, match="must be an int"):
        normalize_dims((2.0,), "block")
    with pytest.raises(TypeError, match="must be an int"):
        normalize_dims(True, "block")
    with pytest.raises(TypeError):
        normalize_dims("32", "block")


@pytest.mark.parametrize(
    ("grid", "block", "shared", "func", "message"),
    [
        ((1, 1, 1), (2048, 1, 1), 0, fn(), r"block\.x = 2048 is over the device's limit of 1024"),
        ((1, 1, 1), (1, 1, 65), 0, fn(), r"block\.z = 65 is over the device's limit of 64"),
        ((1, 1, 1), (64, 32, 1), 0, fn(), "2048 threads, over the device's limit of 1024"),
        ((1, 1, 1), (512, 1, 1), 0, fn(256), "512 threads, over this kernel's limit of 256"),
        ((2**31, 1, 1), (1, 1, 1), 0, fn(), r"grid\.x = 2147483648 .* limit of 2147483647"),
        ((1, 65536, 1), (1, 1, 1), 0, fn(), r"grid\.y = 65536 .* limit of 65535"),
        ((1, 1, 70000), (1, 1, 1), 0, fn(), r"grid\.z = 70000 .* limit of 65535"),
        ((1, 1, 1), (1, 1, 1), -1, fn(), "shared_mem = -1 bytes"),
        ((1, 1, 1), (1, 1, 1), 227 * 1024 + 1, fn(), "over the limit of 232448 bytes"),
        ((1, 1, 1), (1, 1, 1), 227 * 1024, fn(static=16), "less 16 bytes of the kernel's static"),
    ],
)
def test_over_limit_raises_naming_value_and_limit(
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    shared: int,
    func: FunctionLimits,
    message: str,
) -> None:
    with pytest.raises(ValueError, match=message) as info:
        check_launch(grid, block, shared, H100, func)
    assert "k on cuda:0" in str(info.value)


def test_shared_mem_must_be_an_int() -> None:
    with pytest.raises(TypeError, match="shared_mem must be an int"):
        check_launch((1, 1, 1), (1, 1, 1), 1.5, H100, fn())


@given(
    st.integers(1, 1024),
    st.integers(1, 1024),
    st.integers(1, 64),
    st.integers(1, 2**31 - 1),
    st.integers(1, 65535),
    st.integers(1, 65535),
    st.integers(0, 227 * 1024),
)
def test_within_limits_passes(
    bx: int, by: int, bz: int, gx: int, gy: int, gz: int, shared: int
) -> None:
    block = (bx, by, bz)
    ok_threads = bx * by * bz <= 1024
    try:
        check_launch((gx, gy, gz), block, shared, H100, fn())
    except ValueError as exc:
        assert not ok_threads, exc
        assert "threads per block" in str(exc)
    else:
        assert ok_threads


def test_optin_only_above_the_current_cap() -> None:
    f = fn(static=1024)
    assert f.max_dynamic_shared == 47 * 1024
    assert not needs_optin(47 * 1024, f)
    assert needs_optin(47 * 1024 + 1, f)
    f.max_dynamic_shared = 100 * 1024  # what prepare records after opting in
    assert not needs_optin(100 * 1024, f)
    assert needs_optin(200 * 1024, f)


def test_context_lost_error_is_a_runtime_error_and_exported() -> None:
    import pygpukit_cuda
    from pygpukit_cuda import cuda_namespace

    assert issubclass(errors.CudaContextLostError, RuntimeError)
    assert pygpukit_cuda.CudaContextLostError is errors.CudaContextLostError
    assert cuda_namespace.namespace.CudaContextLostError is errors.CudaContextLostError


def test_native_check_maps_sticky_codes() -> None:
    from pygpukit_cuda import _loader

    try:
        mod = _loader.native()
    except _loader.CudaUnavailable as exc:
        pytest.skip(str(exc))
    if not hasattr(mod, "check"):
        pytest.skip("the installed native extension predates check(); rebuild it")
    mod.check(0, "cuNothing")  # success raises nothing
    with pytest.raises(mod.CudaError, match="cuFoo failed") as info:
        mod.check(2, "cuFoo")  # out of memory: an ordinary error
    assert not isinstance(info.value, errors.CudaContextLostError)
    # a sticky code marks a context lost (in this process): run it in a child process
    code = (
        "from pygpukit_cuda import _loader, errors\n"
        "try:\n    _loader.native().check(700, 'cuCtxSynchronize')\n"
        "except errors.CudaContextLostError as e:\n    print('LOST', e)\n"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "LOST cuCtxSynchronize failed" in out.stdout
    assert "context is lost" in out.stdout and "restarted" in out.stdout


def test_cluster_launch_refusals_are_told_from_other_failures() -> None:
    from pygpukit_cuda.launch_limits import cluster_launch_refused

    for name in ("CUDA_ERROR_INVALID_CLUSTER_SIZE", "CUDA_ERROR_NOT_SUPPORTED",
                 "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"):  # fmt: skip
        assert cluster_launch_refused(RuntimeError(f"cuLaunchKernel failed: {name}"))
    illegal = RuntimeError("cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS")
    assert not cluster_launch_refused(illegal)
