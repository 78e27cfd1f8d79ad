"""The tensor-core attention kernels compile to CUBIN for sm_80 and sm_90 without register
spills (a spill would quietly cost most of their speed)."""

from __future__ import annotations

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit import _dtypes as dt
from pygpukit_cuda import _loader, compiler
from pygpukit_cuda.kernels import flash_source


@pytest.mark.skipif(not _loader.is_nvrtc_available(), reason="no NVRTC")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("name_src", flash_source.all_sources(), ids=lambda x: x[0])
def test_flash_kernels_compile_without_spills(arch: int, name_src: tuple[str, str]) -> None:
    name, src = name_src
    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}", "--ptxas-options=-v"]
    ok, image, log = _loader.nvrtc().compile(src, f"{name}.cu", options, True)
    assert ok, log
    assert image[:4] == b"\x7fELF"
    assert "0 bytes spill stores" in log, log


def test_only_half_types_and_two_head_dims_have_instances() -> None:
    assert flash_source.shared_bytes(128) <= 48 * 1024  # no opt-in needed
    with pytest.raises(ValueError, match="no flash attention instance"):
        flash_source.flash_kernel(dt.float32, 64)
    with pytest.raises(ValueError, match="no flash attention instance"):
        flash_source.flash_kernel(dt.bfloat16, 96)
