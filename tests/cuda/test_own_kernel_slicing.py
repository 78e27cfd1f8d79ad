"""Our own kernels in slices for best-effort tasks, checked on the host (launches recorded,
no GPU): the slices of an elementwise op touch exactly the elements, with exactly the
operand addresses, of the whole launch; a reduction's slices are runs of the very blocks of
its whole grid with the same arguments; the NVRTC matmul and batched products are cut into
row and batch runs that cover the output once."""

from __future__ import annotations

import math
import struct
import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pygpukit_cuda._native")

from fake_device_arrays import FakeBuffer, fake_array
from pygpukit import _dtypes as dt
from pygpukit_cuda import cast, device_facts, matmul, plans, provider, reductions, slicing
from pygpukit_cuda.kernels import reduction_source as rs
from pygpukit_cuda.kernels import source
from pygpukit_cuda.kernels.preamble import MAX_DIMS


class Recorder:
    """A loaded kernel and its context in one: launches are logged, nothing runs."""

    def __init__(self, name: str, log: list[tuple[str, Any, bytes]]) -> None:
        self.name = name
        self.handle = hash(name)
        self.context = self
        self.log = log

    def launch(self, func: int, grid: Any, block: Any, shared: int, stream: int, args: Any) -> None:
        self.log.append((self.name, grid, bytes(args)))


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any, bytes]]:
    """Launches recorded in order; slicing asked for as in a best-effort task."""
    out: list[tuple[str, Any, bytes]] = []
    monkeypatch.setattr(provider.launcher, "function",
                        lambda index, name, src, fmt, options=(): Recorder(name, out))  # fmt: skip
    monkeypatch.setitem(device_facts._sm_counts, 0, 132)
    monkeypatch.setattr(provider, "_plans", plans.PlanCache("test-ew", 4096))
    monkeypatch.setattr(reductions, "_plans", plans.PlanCache("test-red", 4096))
    monkeypatch.setattr(reductions, "GPUArray", Scratch)
    return out


@pytest.fixture
def best_effort(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make every op look like one of a best-effort task over 1 MiB slices; the list
    counts the yields between slices."""
    yields: list[int] = []
    monkeypatch.setattr(slicing, "wanted", lambda: True)
    monkeypatch.setattr(slicing, "SLICE_BYTES", 1 << 20)
    monkeypatch.setattr(slicing, "between_slices", lambda: yields.append(1))
    return yields


class Scratch:
    """What reductions allocates for split partial states: a fake block."""

    def __init__(self) -> None:
        self._buffer = FakeBuffer(0x7000_0000, 0)
        self._offset = 0

    @classmethod
    def empty(cls, shape: tuple[int, ...], dtype: Any, device: Any) -> Scratch:
        return cls()


# -- the policy -------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(0, 700), min_size=1, max_size=4).map(tuple)
       .filter(lambda s: math.prod(s) <= 400_000), pieces=st.integers(1, 40))  # fmt: skip
def test_blocks_cover_every_element_once_in_order(shape: tuple[int, ...], pieces: int) -> None:
    seen = np.zeros(shape, np.int32)
    order = np.arange(seen.size).reshape(shape)
    last = -1
    for idx in slicing.blocks(shape, pieces):
        seen[idx] += 1
        part = order[idx]
        if part.size:
            assert part.min() > last, "blocks are not in C order"
            last = part.max()
    assert (seen == 1).all()


def test_large_runs_are_whole_steps_of_elements() -> None:
    parts = slicing.blocks((1 << 28,), 3)
    assert len(parts) == 3
    assert all(p[0].start % slicing.ELEMENT_STEP == 0 for p in parts)
    assert slicing.blocks((5,), 1) == [()] and slicing.blocks((), 4) == [()]


def test_only_best_effort_tasks_slice_by_bytes() -> None:
    import pygpukit as gp

    big = 3 * slicing.SLICE_BYTES
    assert slicing.pieces_for_bytes(big) == 1  # outside a task
    with gp.Scheduler(total_memory="64MB", workers=1) as sched:
        assert sched.submit(slicing.pieces_for_bytes, big, policy="best_effort").result(10) == 3
        assert sched.submit(slicing.pieces_for_bytes, 1000, policy="best_effort").result(10) == 1
        got = sched.submit(slicing.pieces_for_bytes, big, policy="guaranteed", memory="1MB")
        assert got.result(10) == 1


# -- elementwise ------------------------------------------------------------------------
def _elements(spec: source.KernelSpec, args: bytes, arrays: int) -> set[tuple[int, ...]]:
    """(address of each array operand) for every element one recorded launch computes,
    read back from its layout as the kernel reads it."""
    values = struct.unpack(spec.arg_format, args)  # each operand's pointer, then the layout
    ptrs = values[:arrays]
    lay = values[arrays:]
    n, flag = lay[0], lay[1]
    ndim = {0: 1, -2: 2}.get(flag, flag)
    shape = lay[2 : 2 + ndim]
    base = 2 + MAX_DIMS
    strides = [lay[base + k * MAX_DIMS : base + k * MAX_DIMS + ndim] for k in range(arrays)]
    idx = np.indices(shape).reshape(ndim, -1).T if ndim else np.zeros((1, 0), np.int64)
    assert len(idx) == n
    cols = [p + idx @ np.asarray(s, np.int64) for p, s in zip(ptrs, strides, strict=True)]
    return set(zip(*(c.tolist() for c in cols), strict=True))


@pytest.mark.parametrize(
    ("shape", "second"),
    [((1 << 19,), (1 << 19,)), ((300, 700), (700,)), ((6, 7, 9000), (6, 1, 9000))],
)
def test_elementwise_slices_compute_the_same_elements_as_the_whole(log, monkeypatch, shape,
                                                                    second) -> None:  # fmt: skip
    spec = source.binary_kernel("add", dt.float32, dt.float32)
    out = fake_array(shape, dt.float32, 0x1000_0000)
    x1 = fake_array(shape, dt.float32, 0x3000_0000)
    x2 = fake_array(second, dt.float32, 0x5000_0000).broadcast_to(shape)
    provider.run(spec, out, [x1, x2])
    (whole,) = log
    yields: list[int] = []
    monkeypatch.setattr(slicing, "wanted", lambda: True)
    monkeypatch.setattr(slicing, "SLICE_BYTES", 1 << 20)
    monkeypatch.setattr(slicing, "between_slices", lambda: yields.append(1))
    log.clear()
    provider.run(spec, out, [x1, x2])
    assert len(log) >= 3, "the op was not sliced"
    assert len(yields) == len(log) - 1, "no yield between slices"
    want = _elements(spec, whole[2], 3)
    got: list[tuple[int, ...]] = []
    for name, _, args in log:
        assert name == whole[0], "a slice runs another kernel"
        got += _elements(spec, args, 3)
    assert len(got) == len(want) and set(got) == want


def test_an_op_large_enough_to_slice_is_not_taught_to_the_native_fast_path(log) -> None:
    taught: list[Any] = []
    spec = source.unary_kernel("exp", dt.float32, dt.float32)
    provider._fresh_of[id(spec)] = object()
    try:
        real = provider._teach
        provider._teach = lambda *args: taught.append(args)  # type: ignore[assignment]
        n = (slicing.SLICE_BYTES // 8) + 1024  # 4 bytes read + 4 written per element
        provider.run1(spec, fake_array((n,), dt.float32, 0x1000_0000),
                      fake_array((n,), dt.float32, 0x3000_0000))  # fmt: skip
        provider.run1(spec, fake_array((64,), dt.float32, 0x1000_0000),
                      fake_array((64,), dt.float32, 0x3000_0000))  # fmt: skip
    finally:
        provider._teach = real  # type: ignore[assignment]
        provider._fresh_of.pop(id(spec), None)
    assert len(taught) == 1, "the large op was taught (its calls would skip slicing)"


def test_a_large_cast_runs_in_aligned_runs_of_the_same_kernel(log, best_effort, monkeypatch):
    monkeypatch.setattr(cast, "_plans", plans.PlanCache("test-cast", 4096))
    n = 1 << 19  # 4 + 2 bytes an element: 3 MiB, 3 slices of 1 MiB
    src = fake_array((n,), dt.float32, 0x1000_0000)
    out = fake_array((n,), dt.bfloat16, 0x2000_0000)
    assert cast.cast_contiguous(src, out)
    spec = source.cast_kernel(dt.float32, dt.bfloat16)
    assert len(log) == 3 and len(best_effort) == 2
    start = 0
    for name, _, args in log:
        out_ptr, src_ptr, count = struct.unpack(spec.arg_format, args)
        assert name == spec.name and start % slicing.ELEMENT_STEP == 0
        assert (out_ptr, src_ptr) == (0x2000_0000 + 2 * start, 0x1000_0000 + 4 * start)
        start += count
    assert start == n


# -- reductions -------------------------------------------------------------------------
def _blocks_of(grid: Any, args: bytes) -> set[tuple[int, int]]:
    """Every (block x, block y) of the whole grid a recorded main launch runs."""
    bx, by = struct.unpack("@qq", args[-16:])
    gx, gy = grid if isinstance(grid, tuple) else (grid, 1)
    return {(bx + i, by + j) for i in range(gx) for j in range(gy)}


@pytest.mark.parametrize(
    ("shape", "axes", "op"),
    [
        ((1 << 20,), (0,), "sum"),  # one output: a split row reduction and its merge
        ((4096, 512), (1,), "var"),  # many rows, each reduced by a warp
        ((2048, 300), (0,), "argmax"),  # column mode, split along y
        ((64, 40000), (0,), "max"),  # column mode with many tiles
    ],
)
def test_reduction_slices_are_runs_of_the_whole_grid(log, best_effort, monkeypatch, shape,
                                                     axes, op) -> None:  # fmt: skip
    monkeypatch.setattr(slicing, "wanted", lambda: False)
    out_dtype = dt.int64 if op == "argmax" else dt.float32
    spec = rs.reduction_kernel(op, dt.float32, out_dtype)
    x = fake_array(shape, dt.float32, 0x1000_0000)
    kshape = tuple(1 if d in axes else n for d, n in enumerate(shape))
    out = fake_array(kshape, out_dtype, 0x2000_0000)
    reductions.launch(spec, x, out, axes)
    whole = list(log)
    monkeypatch.setattr(slicing, "wanted", lambda: True)
    log.clear()
    reductions.launch(spec, x, out, axes)
    main = [rec for rec in log if not rec[0].endswith("_fin")]
    assert len(main) >= 3, "the reduction was not sliced"
    assert len(best_effort) == len(main) - 1
    # the merge of split states runs once, last, exactly as in the whole launch
    assert [r for r in log if r[0].endswith("_fin")] == [r for r in whole if r[0].endswith("_fin")]
    if whole[-1][0].endswith("_fin"):
        assert log[-1] == whole[-1]
    want = _blocks_of(whole[0][1], whole[0][2])
    got: list[tuple[int, int]] = []
    for name, grid, args in main:
        assert name == whole[0][0] and args[:-16] == whole[0][2][:-16]
        got += _blocks_of(grid, args)
    assert len(got) == len(want) and set(got) == want


# -- matrix products --------------------------------------------------------------------
@pytest.fixture
def products(monkeypatch: pytest.MonkeyPatch) -> list[tuple[tuple[int, ...], int, int]]:
    """NVRTC matmul calls as (out shape, x1 offset, out offset); cuBLASLt absent."""
    calls: list[tuple[tuple[int, ...], int, int]] = []
    monkeypatch.setattr(matmul.cublaslt, "library", lambda: None)

    def nvrtc(x1: Any, x2: Any, out: Any, tf32: bool) -> None:
        calls.append((out.shape, x1.offset, out.offset))

    monkeypatch.setattr(matmul, "_nvrtc_matmul", nvrtc)
    monkeypatch.setattr(matmul, "_ready", plans.PlanCache("test-mm", 64))
    return calls


@pytest.mark.parametrize("dtype", [dt.float32, dt.int32])
def test_the_nvrtc_matmul_runs_in_row_slices(products, best_effort, dtype) -> None:
    m, k, n = 8192, 8192, 8192
    x1 = fake_array((m, k), dtype, 0x1000_0000)
    x2 = fake_array((k, n), dtype, 0x3000_0000)
    out = fake_array((m, n), dtype, 0x5000_0000)
    matmul.matmul(x1, x2, out, False)
    assert len(products) == 4 and len(best_effort) == 3
    rows = [shape[0] for shape, _, _ in products]
    assert sum(rows) == m and all(r % slicing.ROW_STEP == 0 for r in rows)
    start = 0
    for (_, a_off, c_off), r in zip(products, rows, strict=True):
        assert a_off == start * k * dtype.itemsize and c_off == start * n * dtype.itemsize
        start += r


def test_batched_products_run_in_batch_runs(products, best_effort) -> None:
    b, m, k, n = 6, 2048, 4096, 4096  # 2^36 flops per batch: 4 batches per slice
    x1 = fake_array((b, m, k), dt.int32, 0x1000_0000)
    x2 = fake_array((b, k, n), dt.int32, 0x3000_0000)
    out = fake_array((b, m, n), dt.int32, 0x5000_0000)
    matmul.matmul(x1, x2, out, False)
    assert [shape for shape, _, _ in products] == [(4, m, n), (2, m, n)]
    assert [c for _, _, c in products] == [0, 4 * m * n * 4]
    assert len(best_effort) == 1


# -- cancel -----------------------------------------------------------------------------
def test_a_cancel_stops_a_sliced_op_at_its_next_slice(log, monkeypatch) -> None:
    """A best-effort task (real scheduler, real yield) cancelled while its sliced op's first
    slice is enqueued launches no further slice: TaskCancelled from the yield between them."""
    import pygpukit as gp

    monkeypatch.setattr(slicing, "SLICE_BYTES", 1 << 20)
    spec = source.binary_kernel("add", dt.float32, dt.float32)
    out, x1, x2 = (fake_array((1 << 20,), dt.float32, p) for p in (0x1000_0000, 0x3000_0000,
                                                                   0x5000_0000))  # fmt: skip
    handle: list[Any] = []

    def cancel_after_first_launch(*args: Any) -> None:
        log.append(("launch", None, b""))
        handle[0].cancel()  # the task cancels itself, as a caller on another thread would

    def body() -> None:
        provider.run(spec, out, [x1, x2])

    with gp.Scheduler(total_memory="64MB", workers=1) as sched:
        monkeypatch.setattr(Recorder, "launch", lambda self, *a: cancel_after_first_launch())
        started = threading.Event()

        def wait_then_run() -> None:
            started.wait(10)
            body()

        task = sched.submit(wait_then_run, policy="best_effort")
        handle.append(task)
        started.set()
        with pytest.raises(gp.TaskCancelled):
            task.result(10)
    assert len(log) == 1, f"{len(log)} slices were launched after the cancel"
