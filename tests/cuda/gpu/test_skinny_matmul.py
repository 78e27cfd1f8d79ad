"""The skinny matmul (1..8 rows of float16/bfloat16) on the GPU: against NumPy float64 and
cuBLASLt, both weight layouts, odd sizes that fall back, strided x, poisoned outputs,
repeat and graph-replay determinism, several streams, and gp.matmul's choice of path."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit.testing import poison
from pygpukit_cuda import skinny

pytestmark = pytest.mark.gpu

DTYPES = ["float16", "bfloat16"]
#: bf16 keeps 8 bits of mantissa: the rounding of the output alone is 2^-9 relative
TOL = {"float16": 2e-3, "bfloat16": 8e-3}


def _draw(rng: np.random.Generator, shape: tuple[int, ...], name: str) -> np.ndarray:
    np_dtype = dt.as_dtype(name).to_numpy_dtype()
    return rng.standard_normal(shape).astype(np.float32).astype(np_dtype)


def _weight(rng: np.random.Generator, k: int, n: int, name: str,
            layout: str) -> tuple[np.ndarray, gp.GPUArray]:  # fmt: skip
    """A (k, n) weight as host values and as a device array in `layout`: "kn" a plain
    (k, n) array, "nk" the .mT view of (n, k) storage."""
    if layout == "kn":
        w = _draw(rng, (k, n), name)
        return w, gp.asarray(w, device="cuda")
    s = _draw(rng, (n, k), name)
    return s.T, gp.asarray(s, device="cuda").mT


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    g = got.astype(np.float64)
    assert np.isfinite(g).all(), "an output element was left unwritten (poison) or overflowed"
    return float(np.linalg.norm(g - want)) / max(float(np.linalg.norm(want)), 1e-300)


def _check(m: int, k: int, n: int, name: str, layout: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = _draw(rng, (m, k), name)
    w, gw = _weight(rng, k, n, name, layout)
    gx = gp.asarray(x, device="cuda")
    want = x.astype(np.float64) @ w.astype(np.float64)
    out = poison(gp.empty((m, n), dtype=name, device="cuda"))
    took = skinny.matmul(gx, gw, out)
    expected = skinny.refusal(gx, gw, out) is None
    assert took == expected
    if not took:  # the fallback gp.matmul takes
        out = gp.matmul(gx, gw)
    assert _rel(out.to_numpy(), want) < TOL[name], (m, k, n, layout, took)


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("layout", ["kn", "nk"])
@pytest.mark.parametrize(("m", "k", "n"), [
    (1, 2048, 2048), (1, 2048, 2560), (1, 5632, 2048), (1, 1024, 2816), (1, 2816, 1024),
    (8, 4096, 4096), (3, 24, 8192), (5, 4104, 136), (2, 8, 65536), (7, 1000, 264),
    (1, 257, 512), (4, 100000, 8), (1, 2047, 1023),
])  # fmt: skip
def test_products_match_numpy_float64(name: str, layout: str, m: int, k: int, n: int) -> None:
    _check(m, k, n, name, layout, seed=m * 7 + k + n)


def test_random_shapes_match_numpy_float64() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=60, deadline=None, derandomize=True)
    @hypothesis.given(st.integers(1, 8), st.integers(1, 3000), st.integers(1, 700),
                      st.sampled_from(DTYPES), st.sampled_from(["kn", "nk"]),
                      st.booleans())  # fmt: skip
    def run(m: int, k: int, n: int, name: str, layout: str, round8: bool) -> None:
        if round8:  # most draws on the kernel's own path, the rest on the fallback
            k, n = -(-k // 8) * 8, n * 8
        _check(m, k, n, name, layout, seed=k * 31 + n)

    run()


@pytest.mark.parametrize("name", DTYPES)
def test_agrees_with_cublaslt_and_repeats_bit_for_bit(name: str) -> None:
    rng = np.random.default_rng(5)
    gx = gp.asarray(_draw(rng, (2, 2048), name), device="cuda")
    _, gw = _weight(rng, 2048, 5632, name, "kn")
    assert "skinny kn" in skinny.explain(gx, gw)
    first = gp.matmul(gx, gw).to_numpy()
    again = gp.matmul(gx, gw).to_numpy()  # the fixed reduction order: identical bits
    np.testing.assert_array_equal(first.view(np.uint16), again.view(np.uint16))
    skinny.ENABLED = False
    try:
        lt = gp.matmul(gx, gw).to_numpy()
    finally:
        skinny.ENABLED = True
    assert _rel(first, lt.astype(np.float64)) < TOL[name]


def test_strided_x_and_misaligned_weights() -> None:
    rng = np.random.default_rng(9)
    big = _draw(rng, (3, 4100), "bfloat16")
    w = _draw(rng, (2048, 1040), "bfloat16")
    gbig, gw = gp.asarray(big, device="cuda"), gp.asarray(w, device="cuda")
    xs = gbig[:, 4:2052]  # row stride 4100, offset 8 bytes: x may be anywhere
    got = gp.matmul(xs, gw).to_numpy()
    want = big[:, 4:2052].astype(np.float64) @ w.astype(np.float64)
    assert _rel(got, want) < TOL["bfloat16"]
    shifted = gw[:, 4:1028]  # 8-byte offset: no 16-byte loads, cuBLASLt
    assert "aligned" in skinny.explain(xs, shifted)
    want = big[:, 4:2052].astype(np.float64) @ w[:, 4:1028].astype(np.float64)
    assert _rel(gp.matmul(xs, shifted).to_numpy(), want) < TOL["bfloat16"]
    reversed_x = gbig[::-1, 4:2052]  # negative row stride
    want = big[::-1, 4:2052].astype(np.float64) @ w.astype(np.float64)
    assert _rel(gp.matmul(reversed_x, gw).to_numpy(), want) < TOL["bfloat16"]


def test_graph_replay_is_bit_identical_to_eager() -> None:
    rng = np.random.default_rng(3)
    gx = gp.asarray(_draw(rng, (1, 1024), "bfloat16"), device="cuda")
    w1 = gp.asarray(_draw(rng, (1024, 2816), "bfloat16"), device="cuda")
    w2 = gp.asarray(_draw(rng, (1024, 2816), "bfloat16"), device="cuda").mT

    def step(x: gp.GPUArray) -> gp.GPUArray:
        return gp.matmul(gp.matmul(x, w1), w2)  # kn (several splits), then nk

    eager = step(gx).to_numpy()
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        y = step(gx)
    for _ in range(3):  # the counters reset themselves: every replay the same
        g.replay()
        gp.cuda.synchronize()
        np.testing.assert_array_equal(y.to_numpy().view(np.uint16), eager.view(np.uint16))


def test_two_streams_each_keep_their_own_counters() -> None:
    rng = np.random.default_rng(4)
    gw = gp.asarray(_draw(rng, (4096, 2048), "float16"), device="cuda")
    xs = [gp.asarray(_draw(rng, (1, 4096), "float16"), device="cuda") for _ in range(2)]
    want = [gp.matmul(x, gw).to_numpy() for x in xs]
    s1, s2 = gp.cuda.Stream(), gp.cuda.Stream()
    got: list[list[gp.GPUArray]] = [[], []]
    for _ in range(20):
        for i, s in enumerate((s1, s2)):
            with s:
                got[i].append(gp.matmul(xs[i], gw))
    gp.cuda.synchronize()
    for i in range(2):
        for y in got[i]:
            np.testing.assert_array_equal(y.to_numpy().view(np.uint16), want[i].view(np.uint16))
