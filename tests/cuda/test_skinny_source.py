"""The skinny matmul kernels compile to CUBIN for sm_80 and sm_90 (no GPU needed), for
every row count, dtype and weight layout."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit.core import dtypes as dt
from pygpukit_cuda import _loader, compiler
from pygpukit_cuda.kernels import skinny_source


@pytest.mark.skipif(not _loader.is_nvrtc_available(), reason="no NVRTC")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("name_src", skinny_source.all_sources(), ids=lambda x: x[0])
def test_skinny_kernels_compile(arch: int, name_src: tuple[str, str]) -> None:
    name, src = name_src
    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}", "--ptxas-options=-v"]
    ok, image, log = _loader.nvrtc().compile(src, f"{name}.cu", options, True)
    assert ok, log
    assert image[:4] == b"\x7fELF"
    text = log if isinstance(log, str) else bytes(log).decode(errors="replace")
    # __launch_bounds__ caps the registers for the blocks per SM the plan counts on
    spills = re.findall(r"(\d+) bytes spill stores", text)
    assert spills and all(int(b) == 0 for b in spills), text


def test_names_are_unique() -> None:
    names = [n for n, _ in skinny_source.all_sources()]
    assert len(names) == len(set(names)) == 2 * 2 * skinny_source.MAX_ROWS


def test_bad_requests_are_refused() -> None:
    with pytest.raises(ValueError, match="layout"):
        skinny_source.kernel("mn", dt.bfloat16, 1)
    with pytest.raises(TypeError, match="float32"):
        skinny_source.kernel("kn", dt.float32, 1)
    with pytest.raises(ValueError, match="rows"):
        skinny_source.kernel("nk", dt.float16, 9)
