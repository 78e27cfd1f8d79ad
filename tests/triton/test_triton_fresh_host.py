"""The triton elementwise kernels' native fast path without a GPU: plans made from real sm_90
CUBIN metadata, with the driver replaced by a recorder and FreshElementwise by a stand-in,
are taught for contiguous aligned operands of one dtype and shape only, take exactly the
(out, x1[, x2]) pointers in that order, and pack what a Python-path launch packs."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from pygpukit import Device, GPUArray
from pygpukit import _dtypes as dt
from pygpukit.triton import availability

pytestmark = pytest.mark.skipif(not availability.status()[0], reason=availability.status()[1])

CUDA0 = Device("cuda", 0)


class FakeBuffer:
    """A device block's address, nothing more: the launches under test are recorded."""

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr
        self.nbytes = 1 << 40


def fake(shape: tuple[int, ...], ptr: int, dtype: dt.DataType = dt.float32,
         strides: Any = None, offset: int = 0) -> GPUArray:  # fmt: skip
    return GPUArray(FakeBuffer(ptr), shape, dtype, CUDA0, strides, offset)


class Recorder:
    def __init__(self) -> None:
        self.launches: list[tuple[Any, ...]] = []

    def launch(self, func: int, grid: Any, block: Any, shared: int, stream: int,
               args: bytes) -> None:  # fmt: skip
        self.launches.append((grid, block, stream, bytes(args)))


class FakeFresh:
    """Stands in for the native FreshElementwise: keeps what it is taught."""

    def __init__(self, arity: int) -> None:
        self.arity = arity
        self.learned: list[tuple[Any, ...]] = []

    def remember(self, *args: Any) -> None:
        self.learned.append(args)

    def clear(self) -> None:
        self.learned.clear()

    def __len__(self) -> int:
        return len(self.learned)


POOL = SimpleNamespace(allocate=lambda nbytes, stream: None)


@pytest.fixture
def rec(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    from pygpukit.triton.launch import clear_plans
    from pygpukit_cuda import cubin, fresh
    from pygpukit_cuda.launch_plan import PackedLaunch

    class LaunchPlan(PackedLaunch):
        """Named as the native type, so `pygpukit_cuda.fresh.teach` takes it."""

    recorder = Recorder()

    class FakeFunction:
        def __init__(self, index: int, image: bytes, name: str, shared: int) -> None:
            self.shared = shared

        def plan(self, grid: Any, block: Any, params: bytes, slots: Any) -> PackedLaunch:
            return LaunchPlan(recorder, 1, grid, block, self.shared, params, slots)

    clear_plans()
    monkeypatch.setattr(cubin, "load", FakeFunction)
    monkeypatch.setattr(cubin, "compute_capability", lambda index: 90)
    monkeypatch.setattr(availability, "interpret", lambda: False)
    monkeypatch.setattr(fresh, "new", FakeFresh)
    monkeypatch.setattr(fresh, "_pool", lambda out: POOL)
    yield recorder
    clear_plans()


def test_binary_plan_is_taught_with_pointer_slots_out_first(rec: Recorder) -> None:
    from pygpukit.triton.kernels.elementwise import _make_binary

    kernel = _make_binary("add")
    found = kernel.fresh  # type: ignore[attr-defined]
    assert isinstance(found, FakeFresh) and found.arity == 2
    x1, x2, out = fake((3, 50), 0x10000), fake((3, 50), 0x20000), fake((3, 50), 0x30000)
    kernel(x1, x2, out, dt.float32)
    assert len(found) == 1
    device, dtype, n, aligned, plan, allocate, out_dtype, isz, osz, index = found.learned[0]
    assert (device, dtype, n, aligned) == (CUDA0, dt.float32, 150, True)
    assert (allocate, out_dtype, isz, osz, index) == (POOL.allocate, dt.float32, 4, 4, 0)
    direct = rec.launches[-1][-1]
    assert struct.unpack_from("@QQQ", direct) == (0x10000, 0x20000, 0x30000)  # a, b, out
    plan(0, 0x70000, 0x50000, 0x60000)  # as the native fast path calls it: out, x1, x2
    grid, _, _, replay = rec.launches[-1]
    assert struct.unpack_from("@QQQ", replay) == (0x50000, 0x60000, 0x70000)
    assert replay[24:] == direct[24:] and grid == (1, 1, 1)  # n and scratch packed in
    kernel(x1, x2, out, dt.float32)  # the hot path: the same plan, nothing taught again
    assert len(found) == 1 and rec.launches[-1][-1] == direct


def test_unary_plan_is_taught_out_first(rec: Recorder) -> None:
    from pygpukit.triton.kernels.elementwise import _make_unary

    kernel = _make_unary("exp")
    found = kernel.fresh  # type: ignore[attr-defined]
    x, out = fake((2048,), 0x10000, dt.float16), fake((2048,), 0x20000, dt.float16)
    kernel(x, out)
    assert [e[:4] for e in found.learned] == [(CUDA0, dt.float16, 2048, True)]
    direct = rec.launches[-1][-1]
    assert struct.unpack_from("@QQ", direct) == (0x10000, 0x20000)  # x, out
    found.learned[0][4](0, 0x40000, 0x30000)  # out, x
    replay = rec.launches[-1]
    assert struct.unpack_from("@QQ", replay[-1]) == (0x30000, 0x40000)
    assert replay[-1][16:] == direct[16:] and replay[0] == (2, 1, 1)


def test_only_the_replayable_case_is_taught(rec: Recorder) -> None:
    from pygpukit.triton.kernels.elementwise import _make_binary, _make_unary

    add, gelu = _make_binary("add"), _make_unary("gelu")
    a, b, out = fake((64,), 0x10000), fake((64,), 0x20000), fake((64,), 0x30000)
    add(fake((64,), 0x10000, offset=4), b, out, dt.float32)  # a misaligned input
    add(a, b, fake((64,), 0x30000, offset=4), dt.float32)  # a misaligned output
    add(a, 2.0, out, dt.float32)  # a scalar operand
    add(fake((64,), 0x10000, strides=(0,)), b, out, dt.float32)  # broadcast along the axis
    add(a, fake((64,), 0x20000, dt.float16), out, dt.float32)  # mixed dtypes
    add(fake((8, 8), 0x10000, strides=(4, 32)), fake((8, 8), 0x20000),
        fake((8, 8), 0x30000), dt.float32)  # a transposed operand  # fmt: skip
    gelu(a, out, approximate="tanh")  # a parameter the fast path cannot pass
    assert len(add.fresh) == 0 and len(gelu.fresh) == 0  # type: ignore[attr-defined]
    gelu(a, out)
    assert len(gelu.fresh) == 1  # type: ignore[attr-defined]
    assert len(rec.launches) == 8


def test_clear_plans_forgets_the_fast_path_too(rec: Recorder) -> None:
    from pygpukit.triton.kernels.elementwise import _make_binary
    from pygpukit.triton.launch import clear_plans

    kernel = _make_binary("multiply")
    kernel(fake((5,), 0x10000), fake((5,), 0x20000), fake((5,), 0x30000), dt.float32)
    assert len(kernel.fresh) == 1  # type: ignore[attr-defined]
    clear_plans()
    assert len(kernel.fresh) == 0  # type: ignore[attr-defined]


def test_no_fast_path_under_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    from pygpukit.triton.kernels import elementwise
    from pygpukit.triton.kernels.elementwise import _make_binary, _make_unary

    monkeypatch.setattr(elementwise, "interpret", lambda: True)
    assert _make_binary("add").fresh is None  # type: ignore[attr-defined]
    assert _make_unary("exp").fresh is None  # type: ignore[attr-defined]


def test_pygpukit_cuda_fresh_public_helpers() -> None:
    from pygpukit_cuda import fresh

    made = fresh.new(2)
    if made is not None:  # the native extension is loaded
        assert made.arity == 2 and len(made) == 0
    a, b = fake((4,), 0x10000), fake((4,), 0x20000)
    assert not fresh.teach(None, a, [a, b], object())
    assert not fresh.teach(FakeFresh(2), a, [a, b], object())  # not a native plan
    assert not fresh.teachable(a, [a, fake((2, 2), 0x20000)])
