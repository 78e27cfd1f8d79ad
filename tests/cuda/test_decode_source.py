"""The decode-step kernels (embedding, rope_at, kv write, cache attention) compile to CUBIN
for sm_80 and sm_90 (no GPU needed) without register spills."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import _loader, compiler
from pygpukit_cuda.kernels import (
    attend_cluster_source,
    attend_short_source,
    decode_fused_source,
    decode_source,
)


@pytest.mark.skipif(not _loader.is_nvrtc_available(), reason="no NVRTC")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("name_src", decode_source.all_sources(), ids=lambda x: x[0])
def test_decode_kernels_compile(arch: int, name_src: tuple[str, str]) -> None:
    name, src = name_src
    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}"]
    ok, image, log = _loader.nvrtc().compile(src, f"{name}.cu", options, True)
    assert ok, log
    assert image[:4] == b"\x7fELF"


def _ptxas(src: str, name: str, arch: int) -> str:
    """NVRTC's ptxas report (registers, spills) of one kernel; fails if it does not build."""
    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}", "--ptxas-options=-v"]
    ok, image, log = _loader.nvrtc().compile(src, f"{name}.cu", options, True)
    assert ok and image[:4] == b"\x7fELF", log
    return str(log)


@pytest.mark.skipif(not _loader.is_nvrtc_available(), reason="no NVRTC")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("name_src", decode_fused_source.all_sources(), ids=lambda x: x[0])
def test_fused_decode_kernels_compile_without_spills(arch: int, name_src: tuple[str, str]) -> None:
    log = _ptxas(name_src[1], name_src[0], arch)
    assert "0 bytes spill stores" in log and "0 bytes spill loads" in log, log


@pytest.mark.skipif(not _loader.is_nvrtc_available(), reason="no NVRTC")
@pytest.mark.parametrize("name_src", attend_cluster_source.all_sources(), ids=lambda x: x[0])
def test_cluster_attention_compiles_for_sm90_as_a_cluster_kernel(
    name_src: tuple[str, str],
) -> None:
    name, src = name_src
    log = _ptxas(src, name, 90)
    assert "0 bytes spill stores" in log and "0 bytes spill loads" in log, log
    # the cluster shape is part of the kernel (a plain cuLaunchKernel launches it)
    ok, ptx, _ = _loader.nvrtc().compile(src, f"{name}.cu", [*compiler.BASE_OPTIONS,
                                                             "-arch=sm_90"], False)  # fmt: skip
    text = ptx.decode() if isinstance(ptx, bytes) else str(ptx)
    assert ok and f".reqnctapercluster {attend_cluster_source.CLUSTER}, 1, 1" in text


@pytest.mark.skipif(not _loader.is_nvrtc_available(), reason="no NVRTC")
@pytest.mark.parametrize("name_src", attend_short_source.all_sources(), ids=lambda x: x[0])
def test_short_attention_compiles_for_sm90_as_a_cluster_kernel(
    name_src: tuple[str, str],
) -> None:
    name, src = name_src
    log = _ptxas(src, name, 90)
    assert "0 bytes spill stores" in log and "0 bytes spill loads" in log, log
    assert "0 bytes stack frame" in log, log  # no out-of-line calls on the way
    ok, ptx, _ = _loader.nvrtc().compile(src, f"{name}.cu", [*compiler.BASE_OPTIONS,
                                                             "-arch=sm_90"], False)  # fmt: skip
    text = ptx.decode() if isinstance(ptx, bytes) else str(ptx)
    assert ok and f".reqnctapercluster {attend_short_source.CLUSTER}, 1, 1" in text
    # one release (the merge's barrier), one relaxed arrive (the start), no call
    body = text[text.index(f".entry {name}") :]
    assert body.count("barrier.cluster.arrive.release") == 1, name
    assert body.count("barrier.cluster.arrive.relaxed") == 1, name
    assert re.search(r"\bcall(\.uni)?\b", body) is None, name
    # launched programmatically where the build has programmatic dependent launch, its
    # wait before every global read (the first statement after the cluster arrive)
    from pygpukit_cuda.kernels import preamble

    wait = getattr(preamble, "PDL_WAIT", None)
    if wait is not None:
        arrive = src.index("pgk_arrive_relaxed();\n")
        assert src[arrive:].split("\n")[1].strip() == wait, name


def test_short_attention_row_bounds() -> None:
    assert [attend_short_source.rows_bound(r) for r in (1, 4, 5, 8, 9, 16, 17)] == [
        4, 4, 8, 8, 16, 16, None]  # fmt: skip


def test_names_are_unique() -> None:
    names = [n for n, _ in decode_source.all_sources()]
    names += [n for n, _ in decode_fused_source.all_sources() + attend_cluster_source.all_sources()]
    names += [n for n, _ in attend_short_source.all_sources()]
    assert len(names) == len(set(names))


def test_attention_chunks_shorten_for_few_query_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from pygpukit_cuda import decode_ops

    monkeypatch.setattr(decode_ops, "sm_count", lambda index: 132)  # an H100
    # batch-1 TinyLlama decode: 32 rows over a 512-slot cache -> one key per lane
    assert decode_ops._attend_chunk(32, 512, 0) == 32
    # 16 rows x 8192 slots: 64-slot chunks make 2048 warps, at least 8 per SM
    assert decode_ops._attend_chunk(16, 8192, 0) == 64
    # a prefill's many query rows keep the longest chunk
    assert decode_ops._attend_chunk(32 * 2048, 4096, 0) == decode_source.CHUNK
    assert decode_ops._attend_chunk(1, 1, 0) == 32
