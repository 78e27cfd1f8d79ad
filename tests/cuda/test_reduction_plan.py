"""reductions.launch caches a plan per (kernel, device, layouts, axes, param): whatever the
order of calls, each launch gets the grid and arguments a fresh plan gives (no GPU needed,
launches recorded)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("pygpukit_cuda._native")

from fake_device_arrays import FakeBuffer, fake_array
from pygpukit import _dtypes as dt
from pygpukit_cuda import device_facts, plans, reductions
from pygpukit_cuda.kernels import reduction_source as rs


class Scratch:
    """What reductions allocates for split partial states: a numbered fake block."""

    count = 0

    def __init__(self) -> None:
        Scratch.count += 1
        self._buffer = FakeBuffer(0x7000_0000 + Scratch.count * 0x1000, 0)
        self._offset = 0

    @classmethod
    def empty(cls, shape: tuple[int, ...], dtype: Any, device: Any) -> Scratch:
        return cls()


class Recorder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.handle = hash(name)
        self.context = self
        self.launches: list[tuple[str, Any, bytes]] = []

    def launch(self, func: int, grid: Any, block: int, shared: int, stream: int, args: Any) -> None:
        self.launches.append((self.name, grid, bytes(args)))


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any, bytes]]:
    log: list[tuple[str, Any, bytes]] = []
    fns: dict[str, Recorder] = {}

    def function(index: int, name: str, src: str, fmt: str, options: Any = ()) -> Recorder:
        fn = fns.get(name)
        if fn is None:
            fn = fns[name] = Recorder(name)
            fn.launches = log  # one log, in launch order
        return fn

    monkeypatch.setattr(reductions.launcher, "function", function)
    monkeypatch.setitem(device_facts._sm_counts, 0, 132)
    monkeypatch.setattr(reductions, "GPUArray", Scratch)
    monkeypatch.setattr(reductions, "_plans", plans.PlanCache("test", 4096))
    return log


def cases(rng: np.random.Generator) -> list[tuple[Any, Any, tuple[int, ...], float]]:
    out = []
    for _ in range(60):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(rng.choice([1, 3, 64, 700, 5000])) for _ in range(ndim))
        dtype = [dt.float32, dt.float16, dt.int64][int(rng.integers(3))]
        x = fake_array(shape, dtype, 0x1000_0000 + 16 * int(rng.integers(0, 64)))
        if ndim > 1 and rng.random() < 0.4:
            x = x.mT  # a transposed view: other strides, same shape family
        axes = tuple(sorted({int(a) for a in rng.integers(0, x.ndim, int(rng.integers(1, 3)))}))
        kshape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
        o = fake_array(kshape, dt.float32, 0x2000_0000 + 16 * int(rng.integers(0, 64)))
        out.append((x, o, axes, float(rng.choice([0.0, 1.0]))))
    return out


def test_cached_plans_launch_what_fresh_plans_launch(recorder: list[Any]) -> None:
    rng = np.random.default_rng(11)
    spec = rs.reduction_kernel("var", dt.float32, dt.float32)
    calls = cases(rng)
    fresh = []
    for x, o, axes, param in calls:
        reductions._plans.clear()
        Scratch.count = 0
        recorder.clear()
        reductions.launch(spec, x, o, axes, param)
        fresh.append(list(recorder))
    reductions._plans.clear()
    for k in rng.permutation(len(calls)).tolist() * 2:  # every case twice, shuffled
        x, o, axes, param = calls[k]
        Scratch.count = 0
        recorder.clear()
        reductions.launch(spec, x, o, axes, param)
        assert recorder == fresh[k], f"case {k}: shape {x.shape} strides {x.strides} axes {axes}"
    assert any(len(f) == 2 for f in fresh), "no case took the split path with a merge"
    assert any(len(f) == 1 for f in fresh), "no case took the single-launch path"
