"""Our rfft kernel's source (pygpukit_cuda.kernels.rfft_source): which lengths it takes, and
each one compiles to CUBIN for sm_80 and sm_90 without spills (no GPU needed); its twiddle
table is exact to float32 rounding. The kernel's results are checked on the GPU
(tests/cuda/gpu/test_rfft_kernel.py)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import _loader, compiler
from pygpukit_cuda.kernels import rfft_source


def test_lengths_it_takes() -> None:
    assert [n for n in range(2, 5000) if rfft_source.supported(n)] == [128, 1024]
    with pytest.raises(ValueError, match="not 400"):
        rfft_source.source(400)
    assert rfft_source.rows_per_block(1024) * 1024 // 16 == 256  # threads a block
    assert rfft_source.rows_per_block(128) * 128 // 16 == 256


@pytest.mark.parametrize("n", [128, 1024])
def test_twiddle_table_is_rounded_from_double(n: int) -> None:
    text = rfft_source.source(n)
    body = text[text.index(f"pgk_rfft_tw_{n}[{n}] = {{") :]
    values = [float(v) for v in re.findall(r"(-?\d\.\d+e[+-]\d+)f", body[: body.index("};")])]
    table = np.array(values, np.float32).view(np.complex64)
    angles = [-2 * math.pi * m / n for m in range(n)]
    want = np.array([[math.cos(a), math.sin(a)] for a in angles]).astype(np.float32)
    want = want.view(np.complex64)[:, 0]
    np.testing.assert_array_equal(table, want)


@pytest.mark.skipif(not _loader.is_nvrtc_available(), reason="no NVRTC")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("n", [128, 1024])
def test_compiles_without_spills(arch: int, n: int) -> None:
    name = rfft_source.kernel_name(n)
    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}", "--ptxas-options=-v"]
    ok, image, log = _loader.nvrtc().compile(rfft_source.source(n), f"{name}.cu", options, True)
    assert ok and image[:4] == b"\x7fELF", log
    assert "0 bytes spill stores" in str(log) and "0 bytes spill loads" in str(log), log
