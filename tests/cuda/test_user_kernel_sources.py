"""ElementwiseKernel and RawModule without a GPU: parameter parsing, the checks that need
no device, and the generated CUDA C compiling to CUBIN for every dtype combination."""

from __future__ import annotations

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit import _dtypes as dt
from pygpukit_cuda import _loader, compiler
from pygpukit_cuda.dims import merge_dims
from pygpukit_cuda.elementwise_kernel import ElementwiseKernel, _reads_output, parse_params

needs_nvrtc = pytest.mark.skipif(
    not _loader.is_nvrtc_available(), reason="no NVRTC: pip install nvidia-cuda-nvrtc"
)


def test_parameters_parse_with_raw_and_placeholders() -> None:
    ps = parse_params("float32 x, raw T y ,int64 n_items", output=False)
    assert [(p.name, p.type, p.raw) for p in ps] == [
        ("x", "float32", False), ("y", "T", True), ("n_items", "int64", False)
    ]  # fmt: skip
    assert ps[0].dtype is dt.float32 and ps[1].dtype is None


@pytest.mark.parametrize(
    ("ins", "outs", "match"),
    [
        ("float32", "T z", "cannot read parameter"),
        ("T x y", "T z", "cannot read parameter"),
        ("T x, T x", "T z", "used twice"),
        ("T i", "T z", "defined by the kernel"),
        ("T x", "", "names no output"),
        ("T x", "raw T z", "cannot be raw"),
    ],
)
def test_bad_declarations_raise_at_construction(ins: str, outs: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ElementwiseKernel(ins, outs, "z = x", "k")


def test_bad_kernel_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="not a C identifier"):
        ElementwiseKernel("T x", "T z", "z = x", "my kernel")


def test_outputs_are_loaded_only_when_the_operation_reads_them() -> None:
    assert not _reads_output("z = x + y", "z")
    assert not _reads_output("w = 1; z = x", "z")
    assert _reads_output("z += x", "z")
    assert _reads_output("z = z * 2", "z")
    assert _reads_output("if (z == 0) z = x", "z")


def test_dimensions_merge_where_every_operand_is_contiguous() -> None:
    # a contiguous (2, 3, 4) float32 array and a broadcast row: the row breaks the merge
    dims = merge_dims((2, 3, 4), [(48, 16, 4), (0, 0, 4)])
    assert dims == [(6, [16, 0]), (4, [4, 4])]
    assert merge_dims((2, 3, 4), [(48, 16, 4)]) == [(24, [4])]
    assert merge_dims((1, 1), [(8, 8)]) == [(1, [0])]
    assert merge_dims((5, 1, 2), [(8, 99, 4)]) == [(10, [4])]  # size-1 dims are dropped


KERNELS = [
    (ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "sqdiff"), ("T",)),
    (ElementwiseKernel("T x, float32 w", "T z", "z += x * w", "axpy_into"), ("T",)),
    (ElementwiseKernel("raw T x", "T y", "y = x[n - 1 - i]", "reverse"), ("T",)),
    (ElementwiseKernel("T x", "bool m, T r", "m = x > 0; r = m ? x : -x", "two_out"), ("T",)),
    (ElementwiseKernel("", "int64 z", "z = i * 3", "iota3"), ()),
]
SCALAR_CASES = {"sqdiff": (False, True, False), "axpy_into": (False, True, False)}


@needs_nvrtc
@pytest.mark.parametrize("dtype", [dt.float32, dt.float16, dt.bfloat16, dt.float64,
                                   dt.int32, dt.int64, dt.uint8, dt.bool_])  # fmt: skip
def test_generated_sources_compile_to_cubin(dtype: dt.DataType) -> None:
    target = compiler.Target(90, cubin=True)
    for kernel, placeholders in KERNELS:
        types = dict.fromkeys(placeholders, dtype)
        variants = [None, SCALAR_CASES.get(kernel.name)]
        for scalar_at in dict.fromkeys(variants):
            name, src, fmt = kernel.kernel_source(types, scalar_at)
            image = compiler.compile_source(src, name, target, use_cache=False)
            assert image.data[:4] == b"\x7fELF", f"{kernel.name} for {dtype.name}"
            assert fmt.startswith("@")


def test_sources_are_generated_once_per_combination() -> None:
    kernel = ElementwiseKernel("T x", "T z", "z = x", "ident")
    first = kernel.kernel_source({"T": dt.float32})
    assert kernel.kernel_source({"T": dt.float32}) is first
    assert kernel.kernel_source({"T": dt.int8})[0] != first[0]
