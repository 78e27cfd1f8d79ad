"""The native fast path of elementwise ops (FreshElementwise): once the Python path has built
a plan for contiguous operands of one dtype and shape, later calls run in one native call.
Its results must equal the Python path's and NumPy's, with the same array fields; every
case it does not cover (views, broadcasting, scalars, a capturing stream) must decline."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit_cuda import plans, provider

pytestmark = pytest.mark.gpu

BINARY_OPS = ["add", "subtract", "multiply", "maximum", "less", "equal"]
UNARY_OPS = ["negative", "exp", "abs", "isnan", "sqrt"]
DTYPES = [np.float32, np.float16, np.float64, np.int32, np.int64]


def fresh_of(op: str):  # type: ignore[no-untyped-def]
    from pygpukit._dispatch import kernel_for

    a = gp.asarray(np.ones(2, np.float32), device="cuda")
    return kernel_for(op, a.device, (a.dtype,) * 2 if op in BINARY_OPS else (a.dtype,)).fn.fresh


def data(rng: np.random.Generator, dtype: type, shape: tuple[int, ...]) -> np.ndarray:
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(0.1, 4, shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def poison_next(nbytes: int) -> None:
    """Leave a block of NaN-like bytes at the head of the cache, for the next result."""
    junk = gp.asarray(np.full(max(nbytes, 1), 0xFF, np.uint8), device="cuda")
    del junk


@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary_fast_path_matches_numpy_and_the_python_path(op: str) -> None:
    rng = np.random.default_rng(hash(op) & 0xFFFF)
    fresh = fresh_of(op)
    assert fresh is not None, "the cuda provider offers a native fast path"
    for dtype in DTYPES:
        for shape in [(1,), (7,), (1000,), (3, 5), (2, 3, 129)]:
            h1, h2 = data(rng, dtype, shape), data(rng, dtype, shape)
            a, b = gp.asarray(h1, device="cuda"), gp.asarray(h2, device="cuda")
            first = getattr(gp, op)(a, b)  # the Python path: builds and teaches the plan
            learned = len(fresh)
            poison_next(first.nbytes)
            again = fresh(a, b)  # the native path, called directly
            assert again is not NotImplemented, (op, dtype, shape)
            assert len(fresh) == learned
            want = getattr(np, op)(h1, h2)
            for got in (first, again):
                assert type(got) is gp.GPUArray
                assert (got.shape, got.dtype.name) == (want.shape, want.dtype.name)
                assert got.strides == first.strides and got.offset == 0
                assert got.device == a.device
                np.testing.assert_array_equal(got.to_numpy(), want)
            again[...] = again  # writable, as a fresh array must be


@pytest.mark.parametrize("op", UNARY_OPS)
def test_unary_fast_path_matches_numpy(op: str) -> None:
    rng = np.random.default_rng(7)
    fresh = fresh_of(op)
    for dtype in (np.float32, np.float64, np.float16):
        h = data(rng, dtype, (4, 33))
        x = gp.asarray(h, device="cuda")
        getattr(gp, op)(x)
        poison_next(h.size * 8)
        got = fresh(x)
        assert got is not NotImplemented
        want = getattr(np, op)(h)
        assert got.dtype.name == want.dtype.name
        np.testing.assert_allclose(got.to_numpy(), want, rtol=2e-3 if dtype == np.float16 else 1e-6)


def test_the_operator_takes_the_native_path() -> None:
    rng = np.random.default_rng(1)
    h1, h2 = data(rng, np.float32, (5, 6)), data(rng, np.float32, (5, 6))
    a, b = gp.asarray(h1, device="cuda"), gp.asarray(h2, device="cuda")
    a + b
    fresh = fresh_of("add")
    plans.ELEMENTWISE.clear()  # what happens when the plan cache fills up
    assert len(fresh) == 0
    np.testing.assert_array_equal((a + b).to_numpy(), h1 + h2)  # relearned on the way
    assert len(fresh) >= 1
    np.testing.assert_array_equal((a + b).to_numpy(), h1 + h2)


def test_cases_it_does_not_cover_decline() -> None:
    rng = np.random.default_rng(2)
    h, hb = data(rng, np.float32, (8, 8)), data(rng, np.float32, (8, 8))
    a, b = gp.asarray(h, device="cuda"), gp.asarray(hb, device="cuda")
    gp.add(a, b)
    fresh = fresh_of("add")
    assert fresh(a, b) is not NotImplemented
    assert fresh(a.T, b) is NotImplemented  # a transposed view
    assert fresh(a[:, ::2], b[:, ::2]) is NotImplemented  # strided views
    assert fresh(a, b[:1]) is NotImplemented  # shapes differ (broadcasting)
    assert fresh(a, b.astype(gp.float64)) is NotImplemented  # dtypes differ
    assert fresh(a, 1.0) is NotImplemented  # a scalar
    assert fresh(h, h) is NotImplemented  # NumPy arrays
    assert fresh(a[:0], b[:0]) is NotImplemented  # empty
    with pytest.raises(TypeError, match="2 arrays"):
        fresh(a)
    # the declined cases still compute right through the Python path
    np.testing.assert_array_equal((a.T + b).to_numpy(), h.T + hb)
    np.testing.assert_array_equal((a[:, ::2] + b[:, ::2]).to_numpy(), (h + hb)[:, ::2])


def test_fast_path_follows_the_current_stream_and_declines_while_capturing() -> None:
    rng = np.random.default_rng(3)
    h1, h2 = data(rng, np.float32, (256,)), data(rng, np.float32, (256,))
    a, b = gp.asarray(h1, device="cuda"), gp.asarray(h2, device="cuda")
    fresh = fresh_of("multiply")
    s = gp.cuda.Stream()
    with s:
        gp.multiply(a, b)  # teaches (the plan is the same for every stream)
        out = fresh(a, b)
        assert out is not NotImplemented
        s.synchronize()
        np.testing.assert_array_equal(out.to_numpy(), h1 * h2)
        del out
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        assert fresh(a, b) is NotImplemented  # new blocks come from the graph's pool
        captured = a * b
    g.replay()
    gp.cuda.synchronize()
    np.testing.assert_array_equal(captured.to_numpy(), h1 * h2)
    del captured, g


def test_fast_path_results_return_to_the_pool() -> None:
    from pygpukit._placement import backend_of

    rng = np.random.default_rng(4)
    a = gp.asarray(data(rng, np.float32, (4096,)), device="cuda")
    b = gp.asarray(data(rng, np.float32, (4096,)), device="cuda")
    gp.add(a, b)
    used = lambda: backend_of(a.device).memory_stats(a.device)["used"]  # noqa: E731
    before = used()
    results = [a + b for _ in range(50)]
    assert used() >= before + 50 * 4096 * 4
    del results
    assert used() == before


def test_teaching_skips_python_plans() -> None:
    assert provider._fresh_of, "specs built so far each teach their op's fast path"
