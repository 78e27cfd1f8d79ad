"""Every built-in kernel instance compiles to CUBIN for sm_80 and sm_90 (no GPU needed),
and the compiler's errors, targets and disk cache behave."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit import _dtypes as dt
from pygpukit_cuda import _loader, cache, compiler
from pygpukit_cuda.kernels import source

needs_nvrtc = pytest.mark.skipif(
    not _loader.is_nvrtc_available(), reason="no NVRTC: pip install nvidia-cuda-nvrtc"
)

CHUNK = 24


def test_instance_list_covers_every_op_and_dtype() -> None:
    kernels = list(source.all_kernels())
    names = [k.name for k in kernels]
    assert len(names) == len(set(names)), "two instances share an extern C name"
    assert {f"pgk_copy_{d.name}" for d in dt.ALL_DTYPES} <= set(names)
    assert "pgk_add_bfloat16_bfloat16" in names
    assert "pgk_gelu_tanh_float16_float16" in names
    assert "pgk_less_float8_e4m3fn_bool" not in names  # float8 is storage-only


@needs_nvrtc
@pytest.mark.parametrize("arch", [80, 90])
def test_every_builtin_kernel_compiles_to_cubin(arch: int) -> None:
    mod = _loader.nvrtc()
    kernels = list(source.all_kernels())
    chunks = [kernels[i : i + CHUNK] for i in range(0, len(kernels), CHUNK)]
    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}"]

    def build(chunk: list[source.KernelSpec]) -> tuple[list[str], bool, bytes, str]:
        ok, image, log = mod.compile(source.batch_source(chunk), "builtins.cu", options, True)
        return [k.name for k in chunk], ok, image, log

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for names, ok, image, log in pool.map(build, chunks):
            assert ok, f"{names[0]}..{names[-1]} failed for sm_{arch}:\n{log}"
            assert image[:4] == b"\x7fELF", "NVRTC returned something other than a CUBIN"


@needs_nvrtc
def test_one_instance_compiles_alone_as_the_provider_builds_it() -> None:
    spec = source.binary_kernel("add", dt.float16, dt.float16)
    image = compiler.compile_source(spec.source, spec.name, compiler.Target(90, True),
                                    use_cache=False)  # fmt: skip
    assert image.data[:4] == b"\x7fELF" and not image.from_cache


@needs_nvrtc
def test_compile_error_carries_the_log_and_the_offending_line() -> None:
    src = 'extern "C" __global__ void broken(float* x) {\n  x[0] = undefined_name;\n}\n'
    with pytest.raises(compiler.CompileError) as info:
        compiler.compile_source(src, "broken", compiler.Target(90, True), use_cache=False)
    message = str(info.value)
    assert "NVRTC could not compile 'broken' for sm_90" in message
    assert 'identifier "undefined_name" is undefined' in message
    assert "line 2: x[0] = undefined_name;" in message
    assert "undefined_name" in info.value.log
    # the seed's name for compile errors catches it too
    import pygpukit as gp

    assert isinstance(info.value, gp.NvrtcError)
    assert info.value.compilation_log == info.value.log


@needs_nvrtc
def test_target_is_cubin_when_nvrtc_knows_the_arch_else_ptx_or_a_clear_error() -> None:
    mod = _loader.nvrtc()
    archs = sorted(mod.nvrtc_supported_archs())
    major, minor = mod.nvrtc_version()
    nvrtc_as_driver = major * 1000 + minor * 10
    assert compiler.choose_target(90, 12000) == compiler.Target(90, True)
    future = archs[-1] + 1  # a GPU newer than this NVRTC
    assert compiler.choose_target(future, nvrtc_as_driver) == compiler.Target(archs[-1], False)
    with pytest.raises(compiler.CompileError, match="too new for the driver"):
        compiler.choose_target(future, nvrtc_as_driver - 10)


@needs_nvrtc
def test_disk_cache_hit_and_corrupt_entry_is_a_miss(tmp_path: Path) -> None:
    from pygpukit import config

    src = 'extern "C" __global__ void cached(float* x) { x[threadIdx.x] += 1.0f; }\n'
    target = compiler.Target(90, True)
    with config.use(cache_dir=str(tmp_path)):
        first = compiler.compile_source(src, "cached", target)
        second = compiler.compile_source(src, "cached", target)
        assert not first.from_cache and second.from_cache and first.data == second.data
        files = list((tmp_path / "kernels").rglob("*.bin"))
        assert len(files) == 1
        blob = bytearray(files[0].read_bytes())
        blob[-1] ^= 0xFF
        files[0].write_bytes(bytes(blob))
        compiler.clear_memory_cache()  # so the next lookup reaches the (corrupt) disk entry
        third = compiler.compile_source(src, "cached", target)
        assert not third.from_cache and third.data == first.data
        assert compiler.compile_source(src, "cached", target).from_cache  # rewritten


def test_cache_store_and_load_round_trip(tmp_path: Path) -> None:
    key = cache.make_key("a", "b", 1)
    assert cache.make_key("ab", "", 1) != key  # parts cannot run together
    assert cache.load(key, tmp_path) is None
    assert cache.store(key, b"payload", tmp_path)
    assert cache.load(key, tmp_path) == b"payload"
    cache.path_for(key, tmp_path).write_bytes(b"short")
    assert cache.load(key, tmp_path) is None
    assert not list(cache.path_for(key, tmp_path).parent.glob(".tmp-*"))


def test_nvrtc_path_reports_where_it_was_found() -> None:
    path = _loader.get_nvrtc_path()
    if path is None:
        assert "NVRTC not found" in _loader.nvrtc_status()
    else:
        assert Path(path).name.startswith("libnvrtc.so") and Path(path).exists()
        assert path in _loader.nvrtc_status()


@needs_nvrtc
@pytest.mark.parametrize("arch", [80, 90])
def test_matmul_and_nn_kernels_compile_to_cubin(arch: int) -> None:
    """The GEMM (SIMT and mma.sync) and sdpa/rope/bias+GELU instances, one unit each."""
    from pygpukit_cuda import linalg_nn
    from pygpukit_cuda.kernels import gemm_source

    mod = _loader.nvrtc()
    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}"]
    units = {"gemm": gemm_source.batch_source(), "linalg_nn": linalg_nn.batch_source()}
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(
            lambda item: (item[0], *mod.compile(item[1], f"{item[0]}.cu", options, True)),
            units.items(),
        )
        for unit, ok, image, log in results:
            assert ok, f"{unit} kernels failed for sm_{arch}:\n{log}"
            assert image[:4] == b"\x7fELF"


@needs_nvrtc
@pytest.mark.parametrize("arch", [80, 90])
def test_reduction_nn_and_creation_kernels_compile_to_cubin(arch: int) -> None:
    """One instance per template and dtype class of the reduction, scan, nn and creation
    families (each instance is its own program: they share macro names)."""
    from pygpukit_cuda.kernels import creation_source, nn_source, reduction_source

    sources = [*reduction_source.representative_sources(), *nn_source.representative_sources(),
               *creation_source.representative_sources()]  # fmt: skip
    mod = _loader.nvrtc()
    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}"]

    def build(item: tuple[str, str]) -> tuple[str, bool, bytes, str]:
        name, src = item
        ok, image, log = mod.compile(src, f"{name}.cu", options, True)
        return name, ok, image, log

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for name, ok, image, log in pool.map(build, sources):
            assert ok, f"{name} failed for sm_{arch}:\n{log}"
            assert image[:4] == b"\x7fELF", "NVRTC returned something other than a CUBIN"
