"""nn ops against float64 NumPy references: softmax, norms, fused linear, and their errors."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit._ops._core import kernel_on

FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
# (rtol, atol) per dtype: halves are rounded once on output, float32 accumulates a little
TOL: dict[Any, tuple[float, float]] = {
    np.dtype(np.float16): (1e-2, 1e-2),
    np.dtype(ml_dtypes.bfloat16): (2e-2, 2e-2),
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-13),
}
LAYOUTS = ["contiguous", "reversed", "transposed", "strided"]
EXAMPLES = settings(max_examples=50, deadline=None)


@pytest.fixture(autouse=True)
def on_cpu() -> Iterator[None]:
    """These tests check the CPU kernels: new arrays stay on the CPU even beside a GPU."""
    with gp.config.use(device="cpu"):
        yield


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, lo: float = 0.0) -> Any:
    """Normal data (never all zeros) in `dtype`; `lo` shifts it, e.g. to keep norms off zero."""
    return (rng.standard_normal(shape) + lo).astype(dtype)


def upload(a: np.ndarray, layout: str = "contiguous") -> gp.GPUArray:
    """A GPUArray holding `a`'s values, laid out as asked (a view for all but contiguous)."""
    if layout == "reversed" and a.ndim:
        return gp.from_numpy(np.ascontiguousarray(a[..., ::-1]))[..., ::-1]
    if layout == "transposed" and a.ndim >= 2:
        return gp.from_numpy(np.ascontiguousarray(np.swapaxes(a, 0, -1))).transpose(
            (a.ndim - 1, *range(1, a.ndim - 1), 0)
        )
    if layout == "strided" and a.ndim:
        wide = np.zeros((*a.shape[:-1], 2 * a.shape[-1]), dtype=a.dtype)
        wide[..., 1::2] = a
        return gp.from_numpy(wide)[..., 1::2]
    return gp.from_numpy(np.ascontiguousarray(a))


def check(out: gp.GPUArray, ref: np.ndarray, dtype: Any) -> None:
    got = out.to_numpy()
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == ref.shape
    rtol, atol = TOL[np.dtype(dtype)]
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=rtol, atol=atol)


def f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


def shapes(min_dims: int = 1, max_dims: int = 3, min_side: int = 0) -> st.SearchStrategy[Any]:
    return st.lists(st.integers(min_side, 5), min_size=min_dims, max_size=max_dims).map(tuple)


# -- references ------------------------------------------------------------------------
def ref_softmax(a: np.ndarray, axis: int) -> np.ndarray:
    if a.size == 0:
        return a.copy()
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def ref_layernorm(a: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    if a.size == 0:
        return a.copy()
    mean = a.mean(-1, keepdims=True)
    var = ((a - mean) ** 2).mean(-1, keepdims=True)
    return (a - mean) / np.sqrt(var + eps) * g + b


def ref_rmsnorm(a: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    if a.size == 0:
        return a.copy()
    return a / np.sqrt((a * a).mean(-1, keepdims=True) + eps) * g


_erf = np.vectorize(math.erf, otypes=[np.float64])


def ref_gelu(y: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * y * (1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y**3)))
    return 0.5 * y * (1 + _erf(y / math.sqrt(2)))


# -- softmax ---------------------------------------------------------------------------
@EXAMPLES
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=shapes(),
    dtype=st.sampled_from(FLOATS),
    layout=st.sampled_from(LAYOUTS),
    axis_pick=st.integers(0, 10),
    log=st.booleans(),
)
def test_softmax_matches_numpy(
    seed: int, shape: tuple[int, ...], dtype: Any, layout: str, axis_pick: int, log: bool
) -> None:
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dtype) * 3
    axis = axis_pick % len(shape) - (len(shape) if axis_pick % 2 else 0)  # both signs
    x = upload(a, layout)
    out = gp.log_softmax(x, axis=axis) if log else gp.softmax(x, axis=axis)
    ref = ref_softmax(f64(a), axis)
    if log:
        with np.errstate(divide="ignore"):
            ref = np.log(ref)
    check(out, ref, dtype)


def test_softmax_is_stable_for_large_logits() -> None:
    x = gp.asarray(np.array([[1000.0, 1001.0, 1002.0], [-1e4, 0.0, 1e4]], dtype=np.float32))
    got = gp.softmax(x).to_numpy()
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got[0], ref_softmax(np.array([0.0, 1.0, 2.0]), 0), rtol=1e-6)
    np.testing.assert_allclose(got[1], [0, 0, 1], atol=1e-7)
    logp = gp.log_softmax(x).to_numpy()
    assert np.all(np.isfinite(logp))  # no log(0) even where softmax underflows
    np.testing.assert_allclose(logp[1], [-2e4, -1e4, 0], rtol=1e-6)


def test_softmax_with_masked_entries_and_half_precision_extremes() -> None:
    inf = float("inf")
    x = gp.asarray(np.array([[0.0, -inf, 1.0], [-inf, 2.0, -inf]], dtype=np.float32))
    got = gp.softmax(x).to_numpy()
    np.testing.assert_allclose(got[0], [1 / (1 + np.e), 0, np.e / (1 + np.e)], rtol=1e-6)
    np.testing.assert_array_equal(got[1], [0, 1, 0])
    np.testing.assert_array_equal(gp.log_softmax(x).to_numpy()[1], [-inf, 0, -inf])
    big = gp.asarray(np.array([60000.0, 59968.0, -60000.0], dtype=np.float16))
    out = gp.softmax(big)
    assert out.dtype == gp.float16
    want = ref_softmax(np.array([60000.0, 59968.0, -60000.0]), 0)  # exp(60000) overflows
    np.testing.assert_allclose(out.to_numpy().astype(np.float64), want, atol=1e-3)


def test_softmax_default_axis_is_last() -> None:
    a = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    out = gp.softmax(gp.asarray(a)).to_numpy()
    np.testing.assert_allclose(out.sum(-1), np.ones(3), rtol=1e-6)
    assert not np.allclose(out.sum(0), np.ones(4))


def test_softmax_on_a_broadcast_view() -> None:
    row = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    x = gp.asarray(row).broadcast_to((4, 3))
    out = gp.softmax(x).to_numpy()
    np.testing.assert_allclose(out, np.broadcast_to(ref_softmax(f64(row), 0), (4, 3)), rtol=1e-6)


# -- norms -----------------------------------------------------------------------------
@EXAMPLES
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=shapes(min_side=0),
    dtype=st.sampled_from(FLOATS),
    layout=st.sampled_from(LAYOUTS),
    eps=st.sampled_from([1e-5, 1e-6, 0.1]),
)
def test_layernorm_matches_numpy(
    seed: int, shape: tuple[int, ...], dtype: Any, layout: str, eps: float
) -> None:
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dtype) * 2
    g = rand(rng, shape[-1:], dtype, lo=1.0)
    b = rand(rng, shape[-1:], dtype)
    out = gp.layernorm(upload(a, layout), upload(g, layout), upload(b, layout), eps)
    check(out, ref_layernorm(f64(a), f64(g), f64(b), eps), dtype)


@EXAMPLES
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=shapes(min_side=0),
    dtype=st.sampled_from(FLOATS),
    layout=st.sampled_from(LAYOUTS),
    eps=st.sampled_from([1e-5, 1e-6, 0.1]),
)
def test_rmsnorm_matches_numpy(
    seed: int, shape: tuple[int, ...], dtype: Any, layout: str, eps: float
) -> None:
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dtype) * 2
    g = rand(rng, shape[-1:], dtype, lo=1.0)
    out = gp.rmsnorm(upload(a, layout), upload(g, layout), eps=eps)
    check(out, ref_rmsnorm(f64(a), f64(g), eps), dtype)


def test_norms_promote_mixed_dtypes() -> None:
    rng = np.random.default_rng(2)
    a = rand(rng, (3, 4), np.float16)
    g = rand(rng, (4,), np.float32, lo=1.0)
    b = rand(rng, (4,), ml_dtypes.bfloat16)
    ln = gp.layernorm(gp.asarray(a), gp.asarray(g), gp.asarray(b))
    assert ln.dtype == gp.float32
    np.testing.assert_allclose(ln.to_numpy(), ref_layernorm(f64(a), f64(g), f64(b), 1e-5),
                               rtol=1e-5, atol=1e-5)  # fmt: skip
    rms = gp.rmsnorm(gp.asarray(a), gp.asarray(b))
    assert rms.dtype == gp.float32  # float16 with bfloat16 promotes to float32


def test_norm_gamma_may_be_a_broadcast_view() -> None:
    rng = np.random.default_rng(3)
    a = rand(rng, (2, 5), np.float32)
    g = gp.asarray(np.array([1.5], dtype=np.float32)).broadcast_to((5,))
    out = gp.rmsnorm(gp.asarray(a), g)
    check(out, ref_rmsnorm(f64(a), np.full(5, 1.5), 1e-5), np.float32)


def test_layernorm_of_a_constant_row_is_beta() -> None:
    x = gp.full((2, 6), 3.25, dtype=gp.float32)
    g = gp.asarray(np.arange(1, 7, dtype=np.float32))
    b = gp.asarray(np.linspace(-1, 1, 6).astype(np.float32))
    out = gp.layernorm(x, g, b).to_numpy()
    np.testing.assert_allclose(out, np.broadcast_to(b.to_numpy(), (2, 6)), atol=1e-6)


# -- linear_bias_gelu -------------------------------------------------------------------
@EXAMPLES
@given(
    seed=st.integers(0, 2**32 - 1),
    lead=shapes(min_dims=0, max_dims=2),
    n_in=st.integers(0, 6),
    n_out=st.integers(0, 6),
    dtype=st.sampled_from(FLOATS),
    layout=st.sampled_from(LAYOUTS),
    approximate=st.sampled_from(["none", "tanh"]),
)
def test_linear_bias_gelu_matches_numpy(
    seed: int, lead: tuple[int, ...], n_in: int, n_out: int, dtype: Any, layout: str,
    approximate: str,
) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    a = rand(rng, (*lead, n_in), dtype)
    w = (rng.standard_normal((n_out, n_in)) / math.sqrt(max(n_in, 1))).astype(dtype)
    b = rand(rng, (n_out,), dtype)
    out = gp.linear_bias_gelu(upload(a, layout), upload(w, layout), upload(b, layout),
                              approximate=approximate)  # fmt: skip
    y = f64(a) @ f64(w).T + f64(b)
    check(out, ref_gelu(y, approximate), dtype)


def test_linear_bias_gelu_uses_weight_as_out_by_in() -> None:
    x = gp.asarray(np.array([[1.0, 2.0, 3.0]], dtype=np.float64))
    w = gp.asarray(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))  # (out=2, in=3)
    b = gp.asarray(np.array([0.0, -1.0]))
    out = gp.linear_bias_gelu(x, w, b).to_numpy()
    assert out.shape == (1, 2)
    np.testing.assert_allclose(out, ref_gelu(np.array([[1.0, 2.0]]), "none"), rtol=1e-12)


# -- kernels write every element --------------------------------------------------------
def _poisoned(shape: tuple[int, ...], dtype: gp.DataType) -> gp.GPUArray:
    return gp.full(shape, float("nan"), dtype=dtype)


@pytest.mark.parametrize("dtype", [gp.float16, gp.bfloat16, gp.float32, gp.float64])
def test_out_writing_kernels_fill_every_element(dtype: gp.DataType) -> None:
    rng = np.random.default_rng(4)
    npd = dtype.to_numpy_dtype()
    a = rand(rng, (3, 2, 5), npd)
    g = rand(rng, (5,), npd, lo=1.0)
    b = rand(rng, (5,), npd)
    w = rand(rng, (4, 5), npd)
    x, gg, bb, ww = (gp.asarray(v) for v in (a, g, b, w))
    dev = x.device

    out = _poisoned(a.shape, dtype)
    kernel_on("softmax", dev, (dtype,))(x, out, 1)
    check(out, ref_softmax(f64(a), 1), npd)
    out = _poisoned(a.shape, dtype)
    kernel_on("log_softmax", dev, (dtype,))(x, out, 2)
    check(out, np.log(ref_softmax(f64(a), 2)), npd)
    out = _poisoned(a.shape, dtype)
    kernel_on("layernorm", dev, (dtype,) * 3)(x, gg, bb, out, 1e-5)
    check(out, ref_layernorm(f64(a), f64(g), f64(b), 1e-5), npd)
    out = _poisoned(a.shape, dtype)
    kernel_on("rmsnorm", dev, (dtype,) * 2)(x, gg, out, 1e-5)
    check(out, ref_rmsnorm(f64(a), f64(g), 1e-5), npd)
    out = _poisoned((3, 2, 4), dtype)
    kernel_on("linear_bias_gelu", dev, (dtype,) * 3)(x, ww, gg[:4], out, "none")
    check(out, ref_gelu(f64(a) @ f64(w).T + f64(g[:4]), "none"), npd)


# -- dispatch --------------------------------------------------------------------------
def test_explicit_backend_argument_is_honoured() -> None:
    x = gp.asarray(np.ones((2, 3), dtype=np.float32))
    np.testing.assert_allclose(gp.softmax(x, backend="cpu").to_numpy(), np.full((2, 3), 1 / 3))
    with pytest.raises(ValueError, match="unknown backend 'no-such-backend'"):
        gp.softmax(x, backend="no-such-backend")


# -- errors ----------------------------------------------------------------------------
def test_softmax_errors() -> None:
    with pytest.raises(TypeError, match="x must be a GPUArray, got ndarray"):
        gp.softmax(np.ones(3))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"x has dtype int64 .* float16, bfloat16"):
        gp.softmax(gp.asarray([1, 2, 3]))
    with pytest.raises(TypeError, match="bool"):
        gp.log_softmax(gp.asarray([True, False]))
    with pytest.raises(ValueError, match="at least 1 dimension"):
        gp.softmax(gp.asarray(1.0))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        gp.softmax(gp.ones((2, 3)), axis=2)


def test_norm_errors() -> None:
    x = gp.ones((2, 4))
    g4 = gp.ones((4,))
    with pytest.raises(ValueError, match=r"gamma has shape \(3,\) but must have shape \(4,\)"):
        gp.layernorm(x, gp.ones((3,)), g4)
    with pytest.raises(ValueError, match=r"beta has shape \(1, 4\)"):
        gp.layernorm(x, g4, gp.ones((1, 4)))
    with pytest.raises(ValueError, match=r"gamma has shape \(2, 4\)"):
        gp.rmsnorm(x, gp.ones((2, 4)))
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., n\), got 0-D"):
        gp.rmsnorm(gp.asarray(1.0), g4)
    with pytest.raises(TypeError, match="gamma has dtype int64"):
        gp.rmsnorm(x, gp.asarray([1, 2, 3, 4]))
    with pytest.raises(TypeError, match="beta must be a GPUArray, got list"):
        gp.layernorm(x, g4, [0, 0, 0, 0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps must be >= 0, got -1"):
        gp.layernorm(x, g4, g4, eps=-1.0)
    with pytest.raises(ValueError, match="eps must be >= 0, got nan"):
        gp.rmsnorm(x, g4, eps=float("nan"))
    with pytest.raises(TypeError, match="eps must be a float, got str"):
        gp.rmsnorm(x, g4, eps="small")  # type: ignore[arg-type]


def test_linear_bias_gelu_errors() -> None:
    x = gp.ones((2, 3))
    w = gp.ones((4, 3))
    b = gp.ones((4,))
    with pytest.raises(ValueError, match=r"x has 2 input features .* expects 3"):
        gp.linear_bias_gelu(gp.ones((2, 2)), w, b)
    with pytest.raises(ValueError, match=r"weight must have shape \(out_features, in_features\)"):
        gp.linear_bias_gelu(x, gp.ones((3,)), b)
    with pytest.raises(ValueError, match=r"bias has shape \(3,\) but must be \(out_features,\)"):
        gp.linear_bias_gelu(x, w, gp.ones((3,)))
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh', got 'erf'"):
        gp.linear_bias_gelu(x, w, b, approximate="erf")
    with pytest.raises(TypeError, match="weight has dtype float8_e4m3fn"):
        gp.linear_bias_gelu(x, w.astype(gp.float8_e4m3fn), b)
