"""Host-side logic of the CUDA backend that needs no GPU: layouts, scalars, jit signatures."""

from __future__ import annotations

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit import _dtypes as dt
from pygpukit_cuda import jit_kernel as jit
from pygpukit_cuda import provider
from pygpukit_cuda.kernels.preamble import MAX_DIMS


def test_contiguous_arrays_collapse_to_one_dimension() -> None:
    n, lay = provider.layout((2, 3, 4), [(48, 16, 4), (96, 32, 8)])
    assert n == 24
    assert lay[1] == 1 and lay[2] == 24
    assert lay[2 + MAX_DIMS] == 4 and lay[2 + 2 * MAX_DIMS] == 8


def test_broadcast_and_transposed_dimensions_stay_apart() -> None:
    # out (3, 4) contiguous float32; input broadcast along rows (stride 0)
    n, lay = provider.layout((3, 4), [(16, 4), (0, 4)])
    assert n == 12 and lay[1] == 2 and lay[2:4] == [3, 4]
    # a transposed input cannot merge
    n, lay = provider.layout((4, 3), [(12, 4), (4, 16)])
    assert lay[1] == 2


def test_size_one_dimensions_are_dropped_and_scalars_shape_fine() -> None:
    n, lay = provider.layout((1, 5, 1), [(20, 4, 4)])
    assert n == 5 and lay[1] == 1 and lay[2] == 5
    n, lay = provider.layout((), [()])
    assert n == 1 and lay[1] == 1


def test_scalars_wrap_into_the_compute_type() -> None:
    assert provider.scalar_for(dt.int8, 255) == -1
    assert provider.scalar_for(dt.uint8, -1) == 255
    assert provider.scalar_for(dt.float16, 2) == 2.0
    assert provider.scalar_for(dt.bool_, 3) is True


SEED = """
extern "C" __global__
void scale(float* x, float factor, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) x[idx] *= factor;
}
"""


def test_jit_reads_the_parameter_list() -> None:
    params = jit.parse_params(SEED, "scale")
    assert [(p.name, p.ctype, p.pointer) for p in params] == [
        ("x", "float", True), ("factor", "float", False), ("n", "int", False),
    ]  # fmt: skip
    k = jit.JitKernel(SEED, "scale")
    assert k.arg_format == "@Qfi"


def test_jit_signature_qualifiers_and_errors() -> None:
    src = (
        'extern "C" __global__ void __launch_bounds__(128) '
        "f(const float* __restrict__ a, unsigned long long m, double* out) {}"
    )
    assert [p.code for p in jit.parse_params(src, "f")] == ["Q", "Q", "Q"]
    with pytest.raises(ValueError, match="no __global__ function named 'g'"):
        jit.parse_params(src, "g")
    with pytest.raises(ValueError, match="which jit cannot pass"):
        jit.parse_params('extern "C" __global__ void h(float2 v) {}', "h")


def test_jit_binds_and_checks_arguments_before_any_launch() -> None:
    k = jit.JitKernel(SEED, "scale")
    with pytest.raises(TypeError, match="missing argument"):
        k._bind((1,), {})
    with pytest.raises(TypeError, match="has no parameter 'fator'"):
        k._bind((1,), {"fator": 1.0, "n": 3})
    with pytest.raises(TypeError, match="takes 3 arguments but 4"):
        k._bind((1, 2, 3, 4), {})
    p = k.params
    with pytest.raises(TypeError, match="pass a GPUArray"):
        jit._pointer("scale", p[0], [1.0, 2.0])
    with pytest.raises(TypeError, match="pass an int"):
        jit._scalar("scale", p[2], 2.5)
    with pytest.raises(OverflowError, match="does not fit a int"):
        jit._scalar("scale", p[2], 2**40)
    assert jit._scalar("scale", p[1], 2) == 2.0


def test_allocator_table_layout_matches_the_rust_runtime() -> None:
    rust = pytest.importorskip("_pygpukit_rust")
    from pygpukit_cuda import _loader

    native = _loader.native()
    assert native.ALLOCATOR_CAPSULE_NAME == rust.DEVICE_ALLOCATOR_CAPSULE_NAME
    assert native.ALLOCATOR_TABLE_SIZE == rust.DEVICE_ALLOCATOR_TABLE_SIZE


def test_the_launch_gate_is_installed_and_checks_its_table() -> None:
    native = pytest.importorskip("pygpukit_cuda._native")
    rust = pytest.importorskip("_pygpukit_rust")
    from pygpukit_cuda import _loader

    assert _loader.native().launch_gate_installed()
    with pytest.raises(ValueError, match=r"pygpukit\.launch_gate_v1"):
        native.install_launch_gate(rust.host_allocator_capsule(), rust.TaskCancelled)


def test_natively_gated_kernels_are_not_wrapped_again_inside_a_task() -> None:
    import pygpukit as gp
    from pygpukit._ops._core import task_aware

    def kernel() -> None: ...

    def inside() -> tuple[bool, bool]:
        return task_aware(kernel, True) is kernel, task_aware(kernel, False) is kernel

    assert task_aware(kernel, False) is kernel  # no task here: nothing to wrap
    with gp.Scheduler(total_memory="64MB", device="cpu") as sched:
        assert sched.submit(inside).result(30) == (True, False)
