"""Code written for the seed's module tree (`pygpukit.core`, `pygpukit.ops`, `pygpukit.jit`)
imports and runs on the CPU, and gives NumPy's answers."""

from __future__ import annotations

import importlib

import ml_dtypes
import numpy as np
import pygpukit as gp
import pytest

rng = np.random.default_rng(17)

SEED_MODULES = {
    "pygpukit.core": ["GPUArray", "DataType", "float32", "zeros", "ones", "empty", "from_numpy",
                      "Stream", "StreamManager", "default_stream", "get_device_info",
                      "is_cuda_available", "DeviceInfo"],
    "pygpukit.core.dtypes": ["DataType", "float32", "float16", "bfloat16", "int32", "int64"],
    "pygpukit.core.array": ["GPUArray"],
    "pygpukit.core.stream": ["Stream", "StreamManager", "default_stream"],
    "pygpukit.core.memory": ["stats", "free_all_cached", "copy_to_host", "synchronize"],
    "pygpukit.core.device": ["DeviceInfo", "get_device_info", "is_cuda_available"],
    "pygpukit.core.backend": ["get_backend", "has_native_module", "get_native_module",
                              "DeviceProperties", "Backend"],
    "pygpukit.core.factory": ["zeros", "ones", "empty", "from_numpy"],
    "pygpukit.ops": ["add", "sub", "mul", "div", "add_inplace", "mul_inplace", "copy_to", "exp",
                     "log", "relu", "sum", "mean", "max", "softmax", "matmul", "batched_matmul",
                     "transpose", "linear_bias_gelu", "gelu", "silu", "layernorm", "rmsnorm",
                     "bias_add_inplace", "sdpa_causal", "rope_inplace", "concat_axis0",
                     "repeat_interleave_axis1", "transpose_3d_021", "transpose_4d_0213",
                     "reshape_copy", "cast_f32_to_bf16", "cast_f32_to_f16", "cast_bf16_to_f32",
                     "cast_f16_to_f32"],
    "pygpukit.ops.nn": ["gelu", "silu", "layernorm", "rmsnorm", "sdpa_causal", "rope_inplace"],
    "pygpukit.ops.matmul": ["matmul", "batched_matmul", "transpose", "linear_bias_gelu"],
    "pygpukit.ops.elementwise": ["add", "sub", "mul", "div", "add_inplace", "copy_to"],
    "pygpukit.ops.reduction": ["sum", "mean", "max", "softmax"],
    "pygpukit.ops.tensor": ["concat_axis0", "reshape_copy", "cast_f32_to_bf16"],
    "pygpukit.ops.unary": ["exp", "log", "relu"],
    "pygpukit.ops.basic": ["add", "matmul", "rmsnorm", "concat_axis0"],
    "pygpukit.jit": ["JITKernel", "warmup", "is_warmup_done", "get_warmup_error",
                     "check_driver_compatibility", "get_driver_requirements",
                     "is_nvrtc_available", "get_nvrtc_path", "get_nvrtc_version", "NvrtcError"],
    "pygpukit.jit.compiler": ["jit", "JITKernel", "warmup", "check_driver_compatibility"],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(SEED_MODULES))
def test_seed_module_has_the_seed_names(module: str) -> None:
    mod = importlib.import_module(module)
    assert mod.__doc__, module
    missing = [n for n in SEED_MODULES[module] if not hasattr(mod, n)]
    assert not missing, f"{module} lacks {missing}"


def test_seed_modules_reexport_the_real_objects() -> None:
    from pygpukit.core.array import GPUArray
    from pygpukit.core.dtypes import bfloat16, float32
    from pygpukit.ops.nn import rmsnorm
    from pygpukit.ops.reduction import softmax

    assert GPUArray is gp.GPUArray and float32 is gp.float32 and bfloat16 is gp.bfloat16
    assert rmsnorm is gp.rmsnorm and softmax is gp.softmax


SEED_STYLE = """
from pygpukit.core import from_numpy, zeros, float32
from pygpukit.core.stream import Stream, default_stream
from pygpukit.ops import add, mul_inplace, matmul, copy_to
from pygpukit.ops.nn import rmsnorm, gelu
from pygpukit.ops.reduction import softmax, sum as gsum
from pygpukit.ops.tensor import concat_axis0, transpose_3d_021, cast_f32_to_bf16

a = from_numpy(A)
b = from_numpy(B)
stream = Stream()
with stream:
    c = matmul(a, b)
    d = add(c, c)
    mul_inplace(d, 0.5)
stream.synchronize()
default_stream().synchronize()
norm = rmsnorm(c, from_numpy(G), eps=1e-6)
prob = softmax(gelu(c), axis=-1)
total = gsum(c)
both = concat_axis0(a, a)
swapped = transpose_3d_021(from_numpy(T))
half = cast_f32_to_bf16(a)
out = zeros(c.shape, dtype=float32)
copy_to(c, out)
"""


def test_seed_style_code_runs_on_the_cpu_and_matches_numpy() -> None:
    A = rng.standard_normal((4, 8)).astype(np.float32)
    B = rng.standard_normal((8, 5)).astype(np.float32)
    G = rng.standard_normal(5).astype(np.float32)
    T = rng.standard_normal((2, 3, 4)).astype(np.float32)
    env = {"A": A, "B": B, "G": G, "T": T}
    exec(SEED_STYLE, env)
    ref = A.astype(np.float64) @ B
    np.testing.assert_allclose(env["c"].to_numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(env["d"].to_numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(env["out"].to_numpy(), ref, rtol=1e-5, atol=1e-5)
    rms = ref / np.sqrt((ref**2).mean(-1, keepdims=True) + 1e-6) * G
    np.testing.assert_allclose(env["norm"].to_numpy(), rms, rtol=1e-4, atol=1e-5)
    prob = env["prob"].to_numpy()
    np.testing.assert_allclose(prob.sum(-1), np.ones(4), rtol=1e-5)
    np.testing.assert_allclose(float(env["total"].to_numpy()), ref.sum(), rtol=1e-4)
    np.testing.assert_array_equal(env["both"].to_numpy(), np.concatenate([A, A]))
    np.testing.assert_array_equal(env["swapped"].to_numpy(), T.transpose(0, 2, 1))
    np.testing.assert_array_equal(env["half"].to_numpy(), A.astype(ml_dtypes.bfloat16))


def test_seed_casts_refuse_the_wrong_source_dtype() -> None:
    from pygpukit.ops.tensor import cast_bf16_to_f32

    with pytest.raises(TypeError, match="cast_bf16_to_f32 wants a bfloat16 array, got float32"):
        cast_bf16_to_f32(gp.zeros(3))


def test_in_place_seed_ops_write_their_target() -> None:
    from pygpukit.ops.elementwise import add_inplace

    x = rng.standard_normal(6).astype(np.float32)
    y = rng.standard_normal(6).astype(np.float32)
    a = gp.asarray(x)
    assert add_inplace(a, gp.asarray(y)) is a
    np.testing.assert_allclose(a.to_numpy(), x + y, rtol=1e-6)


def test_jit_module_stays_callable_and_checks_the_driver() -> None:
    import pygpukit.jit as jit_module
    from pygpukit.jit import check_driver_compatibility, get_driver_requirements

    assert callable(gp.jit) and callable(jit_module)
    ok, why = check_driver_compatibility()
    assert ok == gp.is_cuda_available() and why
    assert get_driver_requirements()["min_gpu_architecture"].startswith("SM 8.0")
    if not gp.is_cuda_available():
        with pytest.raises(Exception, match=r"CUDA|GPU|driver"):
            jit_module('extern "C" __global__ void k(float* x) {}', func="k")


def test_seed_top_level_jit_names() -> None:
    import pygpukit.jit as jit_module

    assert gp.jit is jit_module  # one meaning from import on, and still callable
    names = ("warmup", "is_warmup_done", "get_warmup_error", "check_driver_compatibility",
             "get_driver_requirements", "get_nvrtc_version", "JITKernel", "NvrtcError")  # fmt: skip
    for name in names:
        assert getattr(gp, name) is getattr(jit_module, name), name
    with pytest.raises(ValueError, match="warmup is not an op"):
        gp.explain("warmup")


def test_warmup_without_a_gpu_reports_why() -> None:
    from pygpukit.jit import get_warmup_error, is_warmup_done, warmup

    if gp.is_cuda_available() and gp.is_nvrtc_available():
        pytest.skip("this machine can compile: the GPU round checks the warm-up itself")
    assert warmup() is False
    assert is_warmup_done()
    assert "not available" in str(get_warmup_error()) or get_warmup_error() is not None


def test_cpu_stream_and_backend_answers() -> None:
    from pygpukit.core.backend import get_backend, get_device_properties, has_native_module
    from pygpukit.core.stream import CpuStream, Stream, StreamManager

    if gp.is_cuda_available():
        pytest.skip("the default device is a GPU here")
    stream = Stream(priority=1)
    assert isinstance(stream, CpuStream) and stream.query() and stream.priority == 1
    manager = StreamManager()
    manager.create_stream()
    manager.create_stream(priority=-1)
    manager.synchronize_all()
    assert len(manager) == 2
    assert get_backend().type == "cpu"
    assert get_device_properties().multiprocessor_count >= 1
    assert has_native_module() == ("cuda" in gp.plugins.devices())
    with pytest.raises(TypeError, match="priority must be an int"):
        Stream(priority="high")  # type: ignore[arg-type]
