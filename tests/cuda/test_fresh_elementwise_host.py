"""FreshElementwise without a GPU: what it refuses at construction and in remember, and that
it declines (NotImplemented) for anything it has not learned."""

from __future__ import annotations

import contextvars

import numpy as np
import pytest

native = pytest.importorskip("pygpukit_cuda._native")

from fake_device_arrays import CUDA0, FakeBuffer  # noqa: E402
from pygpukit import GPUArray  # noqa: E402
from pygpukit import _dtypes as dt  # noqa: E402
from pygpukit_cuda import streams  # noqa: E402


def test_construction_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="GPUArray class"):
        native.fresh_elementwise(object(), streams._current, 2)
    with pytest.raises(TypeError, match="ContextVar"):
        native.fresh_elementwise(GPUArray, None, 2)
    with pytest.raises(ValueError, match="1 or 2 operands"):
        native.fresh_elementwise(GPUArray, streams._current, 3)

    class NoSlots:
        pass

    with pytest.raises(TypeError, match="__slots__ entry _buffer"):
        native.fresh_elementwise(NoSlots, contextvars.ContextVar("s", default=None), 1)


def test_remember_wants_a_native_plan_and_allocator() -> None:
    fresh = native.fresh_elementwise(GPUArray, streams._current, 2)
    assert fresh.arity == 2 and len(fresh) == 0
    with pytest.raises(TypeError, match="native LaunchPlan"):
        fresh.remember(CUDA0, dt.float32, 4, True, lambda *a: None, None, dt.float32, 4, 4, 0)
    with pytest.raises(TypeError):
        fresh.remember(CUDA0)  # too few arguments
    assert len(fresh) == 0


def test_unlearned_operands_decline() -> None:
    fresh = native.fresh_elementwise(GPUArray, streams._current, 2)
    a = GPUArray(FakeBuffer(4096, 16), (4,), dt.float32, CUDA0)
    assert fresh(a, a) is NotImplemented  # a foreign buffer, nothing learned
    assert fresh(np.ones(4), a) is NotImplemented
    with pytest.raises(TypeError, match="takes 2 arrays"):
        fresh(a)
