"""Compiled kernels are kept in the Rust runtime's LRU module cache, in front of the disk."""

from __future__ import annotations

import pytest

compiler = pytest.importorskip("pygpukit_cuda.compiler")
loader = pytest.importorskip("pygpukit_cuda._loader")
if not loader.is_nvrtc_available():
    pytest.skip(f"no NVRTC here: {loader.nvrtc_status()}", allow_module_level=True)


def test_second_compile_is_a_memory_hit(tmp_path):
    from pygpukit import config

    # a source no other test compiles, so the first call must really run NVRTC
    src = f'extern "C" __global__ void k_{tmp_path.name.replace("-", "_")}(float* x)'
    src += " { x[threadIdx.x] *= 3.0f; }"
    name = src.split("void ")[1].split("(")[0]
    target = compiler.Target(90, cubin=True)
    with config.use(cache_dir=str(tmp_path)):  # a fresh cache, on disk and in memory
        before = compiler.stats()
        first = compiler.compile_source(src, name, target)
        second = compiler.compile_source(src, name, target)
        after = compiler.stats()
    assert not first.from_cache and second.from_cache
    assert second.data == first.data
    assert after["compiled"] == before["compiled"] + 1
    assert after["memory_hits"] == before["memory_hits"] + 1
    assert after["disk_hits"] == before["disk_hits"]  # memory answered before the disk
    assert compiler.memory_cache_stats()["entries"] >= 1
