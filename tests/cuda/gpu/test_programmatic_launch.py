"""Programmatic dependent launch on sm_90+: kernels that begin with pgk_pdl_wait() are
marked, and captured into CUDA graphs so that each may start while the kernel ahead of it
finishes. Results must be those of plain stream order: long chains of dependent kernels
(ours after ours, ours after cuBLASLt), eager and replayed from a graph, on inputs large
enough that a kernel still runs when the next starts."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


def _sm90() -> bool:
    from pygpukit_cuda.device_facts import compute_capability

    return compute_capability(0) >= 90


def test_our_kernels_are_marked_on_hopper() -> None:
    from pygpukit_cuda import _loader, launcher

    x = gp.asarray(np.arange(8, dtype=np.float32), device="cuda")
    (x + 1.0).to_numpy()
    native = _loader.driver()
    marked = [f for f in launcher._loaded.values() if f.programmatic]
    if not (_sm90() and launcher.PDL and native.has_launch_ex()):
        assert not marked
        pytest.skip("programmatic launch needs sm_90+ and cuLaunchKernelEx")
    assert marked and all(native.is_programmatic(f.handle) for f in marked)
    plain = [f for f in launcher._loaded.values() if not f.programmatic]
    assert not any(native.is_programmatic(f.handle) for f in plain)


def test_chain_of_dependent_adds_is_exact() -> None:
    # 400 adds of 1.0 to 8M floats: each kernel runs ~10 us, so every launch lands while the
    # one before it is still writing; any early read would leave a count short
    x = gp.zeros((1 << 23,), dtype=gp.float32, device="cuda")
    for _ in range(400):
        x = x + 1.0
    got = x.to_numpy()
    assert got.min() == 400.0 and got.max() == 400.0


def test_captured_chain_of_dependent_adds_is_exact_on_every_replay() -> None:
    from pygpukit_cuda import _loader, launcher

    native = _loader.driver()
    x = gp.zeros((1 << 21,), dtype=gp.float32, device="cuda")  # ~3 us a kernel
    (x + 1.0).to_numpy()
    eager = native.programmatic_launches()
    (x + 1.0).to_numpy()
    assert native.programmatic_launches() == eager  # eagerly: plain launches
    graph = gp.cuda.Graph()
    with gp.cuda.graph(graph):
        y = x
        for _ in range(300):
            y = y + 1.0
    if _sm90() and launcher.PDL and native.has_launch_ex():
        assert native.programmatic_launches() >= eager + 300  # captured programmatically
    for _ in range(3):
        graph.replay()
        got = y.to_numpy()
        assert got.min() == 300.0 and got.max() == 300.0


def test_chain_after_matmuls_eager_and_replayed_match_numpy() -> None:
    rng = np.random.default_rng(4)
    n = 1024
    ws = [(rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32) for _ in range(6)]
    g_ws = [gp.asarray(w, device="cuda") for w in ws]
    gamma = rng.uniform(0.5, 1.5, n).astype(np.float32)
    g_gamma = gp.asarray(gamma, device="cuda")
    x0 = rng.standard_normal((4, n)).astype(np.float32)
    gx = gp.asarray(x0, device="cuda")

    def step(x: gp.GPUArray) -> gp.GPUArray:
        for w in g_ws:  # a product, then our kernels reading it at once
            h = gp.matmul(x, w)
            x = gp.rmsnorm(gp.silu(h) + x, g_gamma)
        return x

    def ref(x: np.ndarray) -> np.ndarray:
        x = x.astype(np.float64)
        for w in ws:
            h = x @ w.astype(np.float64)
            s = h / (1 + np.exp(-h)) + x
            x = s / np.sqrt(np.mean(s * s, axis=-1, keepdims=True) + 1e-5) * gamma
        return x

    eager = step(gx).to_numpy()
    np.testing.assert_allclose(eager, ref(x0), rtol=2e-3, atol=2e-3)  # tf32 products
    graph = gp.cuda.Graph()
    with gp.cuda.graph(graph):
        out = step(gx)
    for _ in range(3):
        graph.replay()
        assert np.array_equal(out.to_numpy().view(np.uint32), eager.view(np.uint32))
