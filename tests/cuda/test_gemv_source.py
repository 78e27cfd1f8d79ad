"""The one-row product's kernels compile to CUBIN for sm_90 (no GPU needed) as cluster
kernels a plain launch runs, without register spills or calls."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import _loader, compiler
from pygpukit_cuda.kernels import gemv_source


@pytest.mark.skipif(not _loader.is_nvrtc_available(), reason="no NVRTC")
@pytest.mark.parametrize("name_src", gemv_source.all_sources(), ids=lambda x: x[0])
def test_gemv_compiles_for_sm90_as_a_cluster_kernel(name_src: tuple[str, str]) -> None:
    name, src = name_src
    options = [*compiler.BASE_OPTIONS, "-arch=sm_90", "--ptxas-options=-v"]
    ok, image, log = _loader.nvrtc().compile(src, f"{name}.cu", options, True)
    assert ok and image[:4] == b"\x7fELF", log
    assert "0 bytes spill stores" in str(log) and "0 bytes spill loads" in str(log), log
    ok, ptx, _ = _loader.nvrtc().compile(src, f"{name}.cu", [*compiler.BASE_OPTIONS,
                                                             "-arch=sm_90"], False)  # fmt: skip
    text = ptx.decode() if isinstance(ptx, bytes) else str(ptx)
    assert ok and f".reqnctapercluster {gemv_source.CLUSTER}, 1, 1" in text
    body = text[text.index(f".entry {name}") :]
    assert re.search(r"\bcall(\.uni)?\b", body) is None, name


def test_names_and_strips() -> None:
    names = [n for n, _ in gemv_source.all_sources()]
    count = len(gemv_source.DTYPES) * len(gemv_source.STRIPS)
    assert len(names) == len(set(names)) == count
    # each output column of a strip is one block's to finish: every strip splits evenly
    assert all(s % gemv_source.CLUSTER == 0 and 256 % (s // 8) == 0 for s in gemv_source.STRIPS)


def test_strips_give_the_sms_enough_blocks_where_they_can() -> None:
    # an H100's 132 SMs: 2048 columns make 16 clusters of 128 (128 blocks), 32 of 64 (256)
    assert gemv_source.strip_for(4096, 132) == 128
    assert gemv_source.strip_for(2048, 132) == 64
    assert gemv_source.strip_for(1024, 132) == 32
    assert gemv_source.strip_for(8, 132) == 32  # too few columns for any: the narrowest


def test_status_says_whether_and_where_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    from pygpukit_cuda import gemv, matmul

    monkeypatch.setattr(gemv, "_refused", set())
    assert gemv.status().startswith("on: one-row float16/bfloat16 products on sm_90+")
    monkeypatch.setattr(gemv, "_refused", {1})
    assert "the driver refused it on cuda:[1]" in gemv.status()
    monkeypatch.setattr(gemv, "ENABLED", False)
    assert gemv.status().startswith("off (PYGPUKIT_GEMV=0)")
    assert matmul.describe()["gemv"] == gemv.status()
