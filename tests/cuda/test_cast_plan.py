"""cast.cast_contiguous plans each (dtypes, device, layout) once: aligned calls launch the
vector cast kernel with (out, src, n), unaligned ones fall back (False), empty arrays
launch nothing. No GPU: launches are recorded."""

from __future__ import annotations

import struct
from typing import Any

import pytest

pytest.importorskip("pygpukit_cuda._native")

from fake_device_arrays import fake_array
from pygpukit import _dtypes as dt
from pygpukit_cuda import cast, plans
from pygpukit_cuda.kernels import source


class Recorder:
    device_index = 0

    def __init__(self) -> None:
        self.handle = 77
        self.context = self
        self.launches: list[tuple[Any, Any, bytes]] = []

    def launch(self, func: int, grid: Any, block: Any, shared: int, stream: int, args: Any) -> None:
        self.launches.append((grid, block, bytes(args)))


def test_aligned_casts_launch_planned_and_others_fall_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = Recorder()
    monkeypatch.setattr(cast.launcher, "function", lambda *args, **kw: rec)
    monkeypatch.setattr(cast, "_plans", plans.PlanCache("test", 4096))
    n = 10_000
    src = fake_array((100, 100), dt.float32, 0x1000_0000)
    out = fake_array((100, 100), dt.bfloat16, 0x2000_0000)
    spec = source.cast_kernel(dt.float32, dt.bfloat16)
    grid = -(-n // (cast.BLOCK * source.CAST_UNROLL * spec.vec))
    for _ in range(3):  # planned once, launched each time
        assert cast.cast_contiguous(src, out)
    assert len(cast._plans) == 1
    want = (grid, cast.BLOCK, struct.pack(spec.arg_format, 0x2000_0000, 0x1000_0000, n))
    assert rec.launches == [want] * 3
    moved = fake_array((100, 100), dt.float32, 0x1000_0000, offset=4)  # off 16-byte alignment
    assert not cast.cast_contiguous(moved, out)
    strided = fake_array((100, 100), dt.float32, 0x1000_0000, strides=(4, 400))  # transposed
    assert not cast.cast_contiguous(strided, out)
    same = fake_array((100, 100), dt.float32, 0x3000_0000)
    assert not cast.cast_contiguous(src, same)  # one dtype: a memcpy, not this kernel
    empty_src = fake_array((0, 5), dt.float32, 0x1000_0000)
    assert cast.cast_contiguous(empty_src, fake_array((0, 5), dt.float16, 0x2000_0000))
    assert len(rec.launches) == 3  # the fallbacks and the empty array launched nothing
