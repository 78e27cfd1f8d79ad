"""The triton provider on a GPU, against NumPy: every op family through ``backend="triton"``
(compiled CUBINs launched by our native launch plans), CUDA-graph capture, a non-default
stream, and the seeds' kernel calls."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(7)
TOL = {"float32": (1e-5, 1e-6), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}


def _arr(
    shape: tuple[int, ...], dtype: str = "float32", lo: float = -2, hi: float = 2
) -> gp.GPUArray:
    return gp.asarray(RNG.uniform(lo, hi, shape).astype(np.float32)).astype(dtype)


def _np(x: gp.GPUArray) -> np.ndarray:
    return x.astype("float32").to_numpy().astype(np.float64)


def _close(got: gp.GPUArray, want: np.ndarray, dtype: str) -> None:
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(_np(got), want, rtol=rtol * 4, atol=atol * 4)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(7, 33), (64, 4096), (3, 20000)])  # tile, wide, loop path
def test_row_ops(dtype: str, shape: tuple[int, int]) -> None:
    x = _arr(shape, dtype)
    w, b = _arr(shape[-1:], dtype, 0.5, 1.5), _arr(shape[-1:], dtype)
    xs = _np(x)
    _close(gp.softmax(x, backend="triton"), _softmax(xs, -1), dtype)
    _close(gp.log_softmax(x, backend="triton"), np.log(_softmax(xs, -1)), dtype)
    rms = xs / np.sqrt((xs**2).mean(-1, keepdims=True) + 1e-5) * _np(w)
    _close(gp.rmsnorm(x, w, 1e-5, backend="triton"), rms, dtype)
    mu, var = xs.mean(-1, keepdims=True), xs.var(-1, keepdims=True)
    _close(gp.layernorm(x, w, b, 1e-5, backend="triton"),
           (xs - mu) / np.sqrt(var + 1e-5) * _np(w) + _np(b), dtype)  # fmt: skip


def test_softmax_over_a_strided_middle_axis() -> None:
    x = _arr((4, 50, 6))[:, ::2, :]
    _close(gp.softmax(x, axis=1, backend="triton"), _softmax(_np(x), 1), "float32")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_elementwise_template(dtype: str) -> None:
    a, b = _arr((33, 70), dtype), _arr((70,), dtype, 0.5, 2)
    an, bn = _np(a), _np(b)
    _close(gp.add(a, b, backend="triton"), an + bn, dtype)
    _close(gp.divide(a, b, backend="triton"), an / bn, dtype)
    _close(gp.multiply(a.mT, 3.0, backend="triton"), an.T * 3.0, dtype)
    _close(gp.silu(a, backend="triton"), an / (1 + np.exp(-an)), dtype)
    t = np.tanh(0.7978845608028654 * (an + 0.044715 * an**3))
    _close(gp.gelu(a, approximate="tanh", backend="triton"), 0.5 * an * (1 + t), dtype)
    u = _arr((33, 70), dtype)
    _close(gp.triton.swiglu(a, u, backend="triton"), an / (1 + np.exp(-an)) * _np(u), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_matmul_batched_and_transposed(dtype: str) -> None:
    a, b = _arr((3, 130, 70), dtype), _arr((70, 90), dtype)
    want = _np(a) @ _np(b)
    got = gp.matmul(a, b, backend="triton")
    np.testing.assert_allclose(_np(got), want, rtol=2e-2, atol=2e-2 * np.abs(want).max())
    got_t = gp.matmul(b.mT, a[0].mT, backend="triton")
    np.testing.assert_allclose(_np(got_t), want[0].T, rtol=2e-2, atol=2e-2 * np.abs(want).max())


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    g = q.shape[-3] // k.shape[-3]
    k, v = np.repeat(k, g, axis=-3), np.repeat(v, g, axis=-3)
    s = q @ np.swapaxes(k, -1, -2) * scale
    sq, skv = q.shape[-2], k.shape[-2]
    mask = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)
    s = np.where(mask, s, -np.inf)
    return _softmax(s, -1) @ v


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("sq,skv", [(200, 200), (37, 300)])
def test_flash_attention_gqa(dtype: str, d: int, sq: int, skv: int) -> None:
    q, k, v = _arr((2, 8, sq, d), dtype), _arr((2, 2, skv, d), dtype), _arr((2, 2, skv, d), dtype)
    scale = 1 / np.sqrt(d)
    got = gp.sdpa_causal(q, k, v, scale, backend="triton")
    _close(
        got,
        _attention(_np(q), _np(k), _np(v), scale),
        "bfloat16" if dtype != "float32" else "float16",
    )


def test_rope_in_place_on_a_view() -> None:
    q, k = _arr((2, 16, 4, 64)), _arr((2, 16, 2, 64))
    ang = RNG.uniform(-3, 3, (16, 32)).astype(np.float32)
    qn, kn = _np(q), _np(k)
    gp.rope_inplace(q, k, gp.asarray(np.cos(ang)), gp.asarray(np.sin(ang)), backend="triton")
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    for got, x in ((q, qn), (k, kn)):
        want = np.concatenate(
            [x[..., :32] * c - x[..., 32:] * s, x[..., 32:] * c + x[..., :32] * s], -1
        )
        _close(got, want, "float32")


def test_graph_capture_replays_triton_kernels() -> None:
    x, w = _arr((16, 256), "bfloat16"), _arr((256,), "bfloat16", 0.5, 1.5)
    q, k, v = (
        _arr((1, 4, 64, 64), "bfloat16"),
        _arr((1, 2, 64, 64), "bfloat16"),
        _arr((1, 2, 64, 64), "bfloat16"),
    )

    def region() -> tuple[gp.GPUArray, gp.GPUArray]:
        h = gp.rmsnorm(x, w, 1e-5, backend="triton")
        h = gp.softmax(gp.multiply(h, 2.0, backend="triton"), backend="triton")
        return h, gp.sdpa_causal(q, k, v, backend="triton")

    eager = [a.to_numpy() for a in region()]  # compiles and tunes outside the capture
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        outs = region()
    g.replay()
    for got, want in zip(outs, eager, strict=True):
        assert np.array_equal(got.to_numpy().view(np.uint16), want.view(np.uint16))


def test_runs_on_the_current_stream() -> None:
    x = _arr((64, 512))
    s = gp.cuda.Stream(non_blocking=True)
    with s:
        y = gp.softmax(x, backend="triton")
        s.synchronize()
    _close(y, _softmax(_np(x), -1), "float32")


def test_seed_api_on_the_gpu() -> None:
    from pygpukit.triton import from_gpuarray, kernels, triton_available

    assert triton_available()
    x, w = _arr((8, 128), "float16"), _arr((128,), "float16", 0.5, 1.5)
    out = gp.empty((8, 128), dtype="float16", device="cuda")
    kernels.rmsnorm(from_gpuarray(x), from_gpuarray(w), from_gpuarray(out), eps=1e-5)
    xs = _np(x)
    _close(out, xs / np.sqrt((xs**2).mean(-1, keepdims=True) + 1e-5) * _np(w), "float16")
