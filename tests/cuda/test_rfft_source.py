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
    assert [n for n in range(2, 5000) if rfft_source.supported(n)] == [1024]
    with pytest.raises(ValueError, match="not 400"):
        rfft_source.source(400)
    assert rfft_source.kernel_name(1024, 8) in rfft_source.source(1024, 8)
    with pytest.raises(ValueError, match="1 to 8, not 16"):
        rfft_source.source(1024, 16)  # 16 rows would need 68 KiB of static shared memory


@pytest.mark.parametrize("n", [1024])
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
@pytest.mark.parametrize("rows", [1, 4, 8])
def test_compiles_without_spills(arch: int, rows: int) -> None:
    n = 1024
    name = rfft_source.kernel_name(n, rows)
    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}", "--ptxas-options=-v"]
    source = rfft_source.source(n, rows)
    ok, image, log = _loader.nvrtc().compile(source, f"{name}.cu", options, True)
    assert ok and image[:4] == b"\x7fELF", log
    assert "0 bytes spill stores" in str(log) and "0 bytes spill loads" in str(log), log
