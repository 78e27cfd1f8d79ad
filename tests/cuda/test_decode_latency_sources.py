"""Decode-latency kernels compile to CUBIN for sm_90 with no spills and no stack frame: the
row kernels' vector path (softmax, log_softmax, layernorm, rmsnorm with whole rows in
registers, gamma and beta beside them) and RoPE of q and k in one launch."""

from __future__ import annotations

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit import _dtypes as dt
from pygpukit_cuda import _loader, compiler
from pygpukit_cuda.kernels import nn_source

OPS = ("softmax", "log_softmax", "layernorm", "rmsnorm")
DTYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


@pytest.mark.skipif(not _loader.is_nvrtc_available(), reason="no NVRTC")
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", OPS)
def test_vector_row_kernels_compile_without_spills(op: str, dtype: dt.DataType) -> None:
    name, src = nn_source.nn_vector_kernel(op, dtype)
    options = [*compiler.BASE_OPTIONS, "-arch=sm_90", "--ptxas-options=-v"]
    ok, image, log = _loader.nvrtc().compile(src, f"{name}.cu", options, True)
    assert ok, log
    assert image[:4] == b"\x7fELF"
    assert "0 bytes spill stores" in log, log
    assert "0 bytes stack frame" in log, log


@pytest.mark.skipif(not _loader.is_nvrtc_available(), reason="no NVRTC")
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_rope_pair_kernel_keeps_its_layouts_out_of_local_memory(dtype: dt.DataType) -> None:
    """q and k in one launch choose between two layout structs by index: each branch
    reads its own, so neither is copied to a stack frame."""
    from pygpukit_cuda import linalg_nn

    name, src = linalg_nn.rope_pair_kernel(dtype, dt.float32)
    options = [*compiler.BASE_OPTIONS, "-arch=sm_90", "--ptxas-options=-v"]
    ok, _, log = _loader.nvrtc().compile(src, f"{name}.cu", options, True)
    assert ok, log
    assert "0 bytes stack frame" in log, log
