"""The triton provider's native elementwise fast path on a GPU: after the Python path has
compiled and bound a plan for contiguous aligned operands, ``kernel.fresh`` replays it in one
native call, with results equal to the Python path's and NumPy's; views, broadcasting and
misaligned operands decline; the current stream is followed and capture declines."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


def fresh_of(op: str) -> Any:
    from pygpukit._dispatch import kernel_for

    a = gp.asarray(np.ones(1, np.float32), device="cuda")
    dtypes = (a.dtype,) if op in ("exp", "silu", "gelu", "negative") else (a.dtype,) * 2
    kernel = kernel_for(op, a.device, dtypes, "triton")
    assert kernel.provider == "triton" and kernel.gated
    return kernel.fn.fresh  # type: ignore[attr-defined]


def data(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(0.25, 2, shape).astype(dtype)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum"])
def test_binary_fast_path_matches_numpy_and_the_python_path(op: str) -> None:
    rng = np.random.default_rng(11)
    fresh = fresh_of(op)
    assert fresh is not None, "the triton provider offers a native fast path"
    for dtype in (np.float32, np.float16, np.float64):
        for shape in [(1,), (7,), (1000,), (3, 50), (2, 3, 1029)]:
            h1, h2 = data(rng, dtype, shape), data(rng, dtype, shape)
            a, b = gp.asarray(h1, device="cuda"), gp.asarray(h2, device="cuda")
            first = getattr(gp, op)(a, b, backend="triton")  # the Python path teaches
            again = fresh(a, b)
            assert again is not NotImplemented, (op, dtype, shape)
            want = getattr(np, op)(h1, h2)
            for got in (first, again):
                assert type(got) is gp.GPUArray and got.shape == shape
                assert got.dtype.name == want.dtype.name and got.strides == first.strides
                np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-3)
            np.testing.assert_array_equal(again.to_numpy(), first.to_numpy())


@pytest.mark.parametrize("op", ["exp", "silu", "negative"])
def test_unary_fast_path_matches_numpy(op: str) -> None:
    rng = np.random.default_rng(12)
    fresh = fresh_of(op)
    ref: Any = {"exp": np.exp, "negative": np.negative, "silu": lambda v: v / (1 + np.exp(-v))}[op]
    for dtype in (np.float32, np.float16):
        h = data(rng, dtype, (4, 33))
        x = gp.asarray(h, device="cuda")
        first = getattr(gp, op)(x, backend="triton")
        got = fresh(x)
        assert got is not NotImplemented
        np.testing.assert_array_equal(got.to_numpy(), first.to_numpy())
        tol = 2e-3 if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got.to_numpy(), ref(h.astype(np.float64)), rtol=tol)


def test_the_tiny_add_takes_the_fast_path() -> None:
    a = gp.asarray(np.array([1.5], np.float32), device="cuda")
    b = gp.asarray(np.array([2.25], np.float32), device="cuda")
    fresh = fresh_of("add")
    gp.add(a, b, backend="triton")
    learned = len(fresh)
    assert learned >= 1
    for _ in range(3):
        assert gp.add(a, b, backend="triton").to_numpy()[0] == 3.75
    assert len(fresh) == learned  # replayed, not relearned


def test_cases_it_does_not_cover_decline_and_still_compute() -> None:
    rng = np.random.default_rng(13)
    h, hb = data(rng, np.float32, (8, 8)), data(rng, np.float32, (8, 8))
    a, b = gp.asarray(h, device="cuda"), gp.asarray(hb, device="cuda")
    gp.add(a, b, backend="triton")
    fresh = fresh_of("add")
    assert fresh(a, b) is not NotImplemented
    assert fresh(a.T, b) is NotImplemented
    assert fresh(a, b[:1]) is NotImplemented
    flat, flatb = a.reshape((64,)), b.reshape((64,))
    assert fresh(flat[1:], flatb[1:]) is NotImplemented  # misaligned: nothing learned
    np.testing.assert_allclose(gp.add(flat[1:], flatb[1:], backend="triton").to_numpy(),
                               (h + hb).reshape(64)[1:], rtol=1e-6)  # fmt: skip
    assert fresh(flat[1:], flatb[1:]) is NotImplemented  # still: its plan assumes no alignment
    np.testing.assert_allclose(gp.add(a.T, b, backend="triton").to_numpy(), h.T + hb, rtol=1e-6)


def test_follows_the_current_stream_and_declines_while_capturing() -> None:
    rng = np.random.default_rng(14)
    h1, h2 = data(rng, np.float32, (256,)), data(rng, np.float32, (256,))
    a, b = gp.asarray(h1, device="cuda"), gp.asarray(h2, device="cuda")
    fresh = fresh_of("multiply")
    s = gp.cuda.Stream(non_blocking=True)
    with s:
        gp.multiply(a, b, backend="triton")
        out = fresh(a, b)
        assert out is not NotImplemented
        s.synchronize()
        np.testing.assert_allclose(out.to_numpy(), h1 * h2, rtol=1e-6)
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        assert fresh(a, b) is NotImplemented
        captured = gp.multiply(a, b, backend="triton")
    g.replay()
    gp.cuda.synchronize()
    np.testing.assert_allclose(captured.to_numpy(), h1 * h2, rtol=1e-6)


def test_clear_plans_empties_the_fast_path() -> None:
    from pygpukit.triton.launch import clear_plans

    a = gp.asarray(np.ones(33, np.float32), device="cuda")
    gp.add(a, a, backend="triton")
    fresh = fresh_of("add")
    assert len(fresh) >= 1
    clear_plans()
    assert len(fresh) == 0
    np.testing.assert_array_equal(gp.add(a, a, backend="triton").to_numpy(), np.full(33, 2.0))
    assert len(fresh) >= 1
