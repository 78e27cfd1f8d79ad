"""provider.run's launch plans (cached per kernel and operand layout) pack exactly the
arguments the plain computation gives, in any order of calls: no GPU, launches recorded."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pygpukit_cuda._native")

from fake_device_arrays import CUDA0, FakeBuffer
from pygpukit import GPUArray
from pygpukit import _dtypes as dt
from pygpukit_cuda import device_facts, plans, provider
from pygpukit_cuda.kernels import source
from pygpukit_cuda.kernels.ctypes_table import ctype


class Recorder:
    """Stands in for launcher.Function and its context: keeps what each launch was given."""

    device_index = 0

    def __init__(self, name: str) -> None:
        self.name = name
        self.handle = hash(name)
        self.context = self
        self.launches: list[tuple[int, int, bytes]] = []

    def launch(self, func: int, grid: int, block: int, shared: int, stream: int, args: Any) -> None:
        assert (func, shared, stream) == (self.handle, 0, 0)
        self.launches.append((grid, block, bytes(args)))


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict[str, Recorder]:
    fns: dict[str, Recorder] = {}

    def function(index: int, name: str, src: str, fmt: str, options: Any = ()) -> Recorder:
        return fns.setdefault(name, Recorder(name))

    monkeypatch.setattr(provider.launcher, "function", function)
    monkeypatch.setitem(device_facts._sm_counts, 0, 132)
    monkeypatch.setattr(provider, "_plans", plans.PlanCache("test", 4096))
    return fns


def reference(spec: source.KernelSpec, out: GPUArray, inputs: list[Any]) -> tuple[int, bytes]:
    """(grid, packed arguments) computed from scratch, as run did before plans."""
    arrays = [out] + [x for x in inputs if isinstance(x, GPUArray)]
    n, lay = provider.layout(out.shape, [x.strides for x in arrays])
    ptrs = [out.buffer.ptr + out.offset]
    codes, scalars = [], []
    for x, as_dtype in zip(inputs, spec.inputs, strict=True):
        if isinstance(x, GPUArray):
            ptrs.append(x.buffer.ptr + x.offset)
            codes.append(ctype(x.dtype).code)
            scalars.append(provider.scalar_for(as_dtype, 0))
        else:
            ptrs.append(0)
            codes.append(0)
            scalars.append(provider.scalar_for(as_dtype, x))
    if len(arrays) != len(inputs) + 1:
        lay = provider._spread(lay, [True] + [isinstance(x, GPUArray) for x in inputs])
    flag = provider._vector_path(n, lay, arrays, ptrs, spec.vec)
    if flag is not None:
        lay[1] = flag
        grid = -(-n // (provider.BLOCK * spec.vec))
    else:
        grid = provider._grid(0, n)
    return grid, struct.pack(spec.arg_format, *ptrs, *lay, *codes, *scalars)


def array(rng: np.random.Generator, dtype: dt.DataType, shape: tuple[int, ...]) -> GPUArray:
    """A view of `shape` over a fake buffer: contiguous, transposed, strided, offset, or
    broadcast, at a 16-byte aligned base or not."""
    size = dtype.itemsize
    base = int(rng.choice([1 << 20, (1 << 20) + size])) if size < 16 else 1 << 20
    how = rng.integers(0, 5)
    n = int(np.prod(shape))
    strides = [0] * len(shape)
    step = size
    for d in reversed(range(len(shape))):
        strides[d] = step
        step *= shape[d]
    offset = 0
    if how == 1 and len(shape) >= 2:  # column-major storage (a transposed view)
        step = size
        for d in range(len(shape)):
            strides[d] = step
            step *= shape[d]
    elif how == 2:  # every other element
        strides = [2 * s for s in strides]
    elif how == 3:  # a slice starting one element in
        offset = size
    elif how == 4 and len(shape) >= 1:  # broadcast along the first axis
        strides[0] = 0
    buf = FakeBuffer(base, 4 * n * size + 64)
    return GPUArray(buf, shape, dtype, CUDA0, tuple(strides), offset)


# (kernel, its output dtype, number of inputs)
CASES = [
    (source.binary_kernel("add", dt.float32, dt.float32), dt.float32, 2),
    (source.binary_kernel("multiply", dt.int8, dt.int8), dt.int8, 2),
    (source.binary_kernel("less", dt.float64, dt.bool_), dt.bool_, 2),
    (source.binary_kernel("add", dt.bfloat16, dt.bfloat16), dt.bfloat16, 2),
    (source.unary_kernel("exp", dt.float16, dt.float16), dt.float16, 1),
    (source.where_kernel(dt.int32), dt.int32, 3),
    (source.copy_kernel(dt.float32), dt.float32, 1),
]
SHAPES = [(1,), (7,), (64,), (3, 8), (4, 1, 16), (2, 3, 5), (0,), (5, 0)]


def scalar_of(rng: np.random.Generator, dtype: dt.DataType) -> Any:
    if dtype.kind == "b":
        return bool(rng.integers(0, 2))
    if dtype.is_integer:
        return int(rng.integers(-300, 300))  # wraps into small types, as a C cast would
    return float(rng.uniform(-5, 5))


def test_plans_pack_what_a_fresh_computation_packs(recorded: dict[str, Recorder]) -> None:
    rng = np.random.default_rng(7)
    for i in range(600):
        spec, out_dtype, arity = CASES[int(rng.integers(0, len(CASES)))]
        shape = SHAPES[int(rng.integers(0, len(SHAPES)))]
        offset = out_dtype.itemsize * int(rng.integers(0, 2))  # aligned or not
        out = GPUArray(FakeBuffer(1 << 24, 1 << 12), shape, out_dtype, CUDA0, None, offset)
        inputs: list[Any] = []
        for k in range(arity):
            d = spec.inputs[k]
            if spec.name.startswith("pgk_copy"):  # copy converts any dtype
                d = [dt.float32, dt.int16, dt.bfloat16][int(rng.integers(0, 3))]
            if arity > 1 and rng.random() < 0.3:
                inputs.append(scalar_of(rng, d))
            else:
                inputs.append(array(rng, d, shape))
        if all(not isinstance(x, GPUArray) for x in inputs) and arity > 1:
            inputs[0] = array(rng, spec.inputs[0], shape)
        if spec.name.startswith("pgk_where") and isinstance(inputs[0], GPUArray):
            inputs[0] = array(rng, dt.bool_, shape)
        fn = recorded.setdefault(spec.name, Recorder(spec.name))
        before = len(fn.launches)
        provider.run(spec, out, inputs)
        grid, want = reference(spec, out, inputs)
        if out.size == 0:
            assert len(fn.launches) == before, f"case {i}: launched an empty array"
            continue
        got_grid, block, got = fn.launches[-1]
        assert (got_grid, block) == (grid, provider.BLOCK), f"case {i}: {spec.name} {shape}"
        assert got == want, f"case {i}: {spec.name} {shape} {inputs!r}"
    assert 0 < len(provider._plans) < 600  # repeats reused their plans


def test_a_plan_never_serves_another_alignment(recorded: dict[str, Recorder]) -> None:
    spec = source.binary_kernel("add", dt.float32, dt.float32)
    a = GPUArray(FakeBuffer(1 << 20, 4096), (64,), dt.float32, CUDA0)
    b = GPUArray(FakeBuffer(1 << 20, 4096), (64,), dt.float32, CUDA0, None, 4)  # misaligned
    out = GPUArray(FakeBuffer(1 << 21, 4096), (64,), dt.float32, CUDA0)
    fn = recorded.setdefault(spec.name, Recorder(spec.name))
    for x in (a, b, a, b):
        provider.run(spec, out, [a, x])
        assert fn.launches[-1][0] == reference(spec, out, [a, x])[0]
        assert fn.launches[-1][2] == reference(spec, out, [a, x])[1]
    ndim = [struct.unpack_from("@q", args, 3 * 8 + 8)[0] for _, _, args in fn.launches]
    assert ndim == [0, 1, 0, 1]  # the vector path only for the aligned operand


def test_scalars_are_packed_per_call(recorded: dict[str, Recorder]) -> None:
    spec = source.binary_kernel("add", dt.int8, dt.int8)
    a = GPUArray(FakeBuffer(1 << 20, 64), (8,), dt.int8, CUDA0)
    out = GPUArray(FakeBuffer(1 << 21, 64), (8,), dt.int8, CUDA0)
    fn = recorded.setdefault(spec.name, Recorder(spec.name))
    for value in (1, -1, 255, 127, 128, -129):
        for inputs in ([a, value], [value, a]):
            provider.run(spec, out, inputs)
            assert fn.launches[-1][2] == reference(spec, out, inputs)[1]
    assert len(provider._plans) == 2  # scalar on the left, scalar on the right


def test_a_full_plan_table_starts_over(
    recorded: dict[str, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provider._plans, "limit", 3)
    spec = source.binary_kernel("add", dt.float32, dt.float32)
    fn = recorded.setdefault(spec.name, Recorder(spec.name))
    for n in (1, 2, 3, 4, 5, 1, 2):
        a = GPUArray(FakeBuffer(1 << 20, 64), (n,), dt.float32, CUDA0)
        out = GPUArray(FakeBuffer(1 << 21, 64), (n,), dt.float32, CUDA0)
        provider.run(spec, out, [a, 2.5])
        assert fn.launches[-1][2] == reference(spec, out, [a, 2.5])[1]
        assert len(provider._plans) <= 3


def test_run1_and_run2_share_the_plans_run_makes(recorded: dict[str, Recorder]) -> None:
    add = source.binary_kernel("add", dt.float32, dt.float32)
    neg = source.unary_kernel("negative", dt.float32, dt.float32, None)
    a = GPUArray(FakeBuffer(1 << 20, 4096), (8, 16), dt.float32, CUDA0)
    b = GPUArray(FakeBuffer(1 << 22, 4096), (16, 8), dt.float32, CUDA0).mT  # transposed
    out = GPUArray(FakeBuffer(1 << 21, 4096), (8, 16), dt.float32, CUDA0)
    provider.run(add, out, [a, b])
    provider.run(neg, out, [b])
    assert len(provider._plans) == 2
    provider.run2(add, out, a, b)
    provider.run1(neg, out, b)
    provider.run2(add, out, b, a)  # another layout: a plan of its own, built through run
    assert len(provider._plans) == 3
    adds, negs = recorded[add.name].launches, recorded[neg.name].launches
    assert adds[1] == adds[0] and negs[1] == negs[0]  # the fast key found run's plans
    assert adds[2][2] == reference(add, out, [b, a])[1]
