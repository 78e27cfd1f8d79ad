"""The bandwidth fast paths against NumPy: the contiguous float cast kernel (bit-exact,
specials included, views that must fall back), argmax/argmin's per-thread update (first
occurrence, first NaN, all-lowest runs, the split full reduction) and the row ops' vector
path (every float dtype, lengths that take it and lengths/views that fall back)."""

from __future__ import annotations

import math

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit._plugins import registry
from pygpukit.testing import poison

pytestmark = pytest.mark.gpu

FLOATS = [dt.float16, dt.bfloat16, dt.float32, dt.float64]


def np_dtype(d: dt.DataType) -> np.dtype:
    return np.dtype(d.to_numpy_dtype())


def specials(d: dt.DataType, n: int, seed: int) -> np.ndarray:
    """n random values of d spanning its range, with NaN, infinities, signed zeros,
    subnormals and values that overflow narrower types."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, n) * 10.0 ** rng.integers(-8, 8, n)
    picks = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -3e-8, 65504.0, 65520.0, 1e39, 3.4e38]
    k = min(n, len(picks))
    x[rng.choice(n, k, replace=False)] = picks[:k]
    with np.errstate(all="ignore"):
        return x.astype(np_dtype(d))


def same_bits(got: np.ndarray, want: np.ndarray, name: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, name
    gn, wn = np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64))
    np.testing.assert_array_equal(gn, wn, err_msg=f"{name}: NaN positions")
    np.testing.assert_array_equal(got[~gn].view(np.uint8), want[~wn].view(np.uint8),
                                  err_msg=name)  # fmt: skip


# -- casts ------------------------------------------------------------------------------
@pytest.mark.parametrize("src", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("to", FLOATS, ids=lambda d: d.name)
def test_contiguous_cast_is_exact(src: dt.DataType, to: dt.DataType) -> None:
    from pygpukit_cuda import cast

    if src is to:
        pytest.skip("a same-dtype copy is a memcpy")
    fns = registry().providers["cuda"].kernels
    for i, n in enumerate([1, 3, 7, 8, 9, 1000, 4 * 4096 + 5, (1 << 20) + 3]):
        host = specials(src, n, seed=i)
        x = gp.asarray(host, device="cuda")
        with np.errstate(all="ignore"):
            want = host.astype(np_dtype(to))
        out = poison(gp.empty((n,), dtype=to, device="cuda"))
        assert cast.applies(x, out)
        fns["copy"].fn(x, out)
        same_bits(out.to_numpy(), want, f"{src.name}->{to.name} n={n}")
        same_bits(gp.astype(x, to).to_numpy(), want, f"astype {src.name}->{to.name} n={n}")
    # 2-D, an unaligned view and a strided view: the first takes the kernel, the others
    # fall back to the generic copy and must still be exact
    host = specials(src, 3 * 1001, seed=9).reshape(3, 1001)
    x = gp.asarray(host, device="cuda")
    for view, hv, fast in ((x, host, True), (x[:, 1:], host[:, 1:], False),
                           (x[:, ::2], host[:, ::2], False)):  # fmt: skip
        out = gp.empty(hv.shape, dtype=to, device="cuda")
        assert cast.applies(view, out) is fast
        with np.errstate(all="ignore"):
            same_bits(gp.astype(view, to).to_numpy(), hv.astype(np_dtype(to)), "view")
    flat = x.reshape((3 * 1001,))[1:]  # contiguous but 16-byte misaligned
    assert not cast.applies(flat, gp.empty(flat.shape, dtype=to, device="cuda"))
    with np.errstate(all="ignore"):
        same_bits(gp.astype(flat, to).to_numpy(), host.reshape(-1)[1:].astype(np_dtype(to)), "off")


# -- argmax / argmin --------------------------------------------------------------------
def arg_host(d: dt.DataType, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if d.kind == "b":
        return rng.random(n) < 0.01
    if d.is_floating:
        return rng.normal(0, 1, n).astype(np_dtype(d))
    info = np.iinfo(np_dtype(d))
    return rng.integers(info.min, info.max, n, endpoint=True, dtype=np_dtype(d))


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("d", [dt.float32, dt.bfloat16, dt.float64, dt.int32, dt.uint8,
                               dt.bool_], ids=lambda d: d.name)  # fmt: skip
def test_full_arg_reduction_first_occurrence(op: str, d: dt.DataType) -> None:
    fn = getattr(np, op)
    for i, n in enumerate([1, 5, 33, 4097, 300_001, (1 << 22) + 7]):
        host = arg_host(d, n, seed=i)
        wide = host.astype(np.float64) if d.is_floating else host
        # the extreme repeated: three copies, the first must win
        extreme = wide.max() if op == "argmax" else wide.min()
        host[np.random.default_rng(i).choice(n, min(n, 3), replace=False)] = extreme
        wide = host.astype(np.float64) if d.is_floating else host
        got = gp.argmax if op == "argmax" else gp.argmin
        assert int(got(gp.asarray(host, device="cuda")).to_numpy()) == int(fn(wide)), n
        if d.is_floating and n > 40:
            host[[n - 2, 17, n // 2]] = np.nan  # the first NaN wins, wherever it sits
            assert int(got(gp.asarray(host, device="cuda")).to_numpy()) == 17, n


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reduction_runs_of_the_start_value(op: str) -> None:
    """All elements equal to the state's start value (-inf for argmax, +inf for argmin,
    the integer extremes): index 0 of each row, also over the split path."""
    fn, g = getattr(np, op), getattr(gp, op)
    for n in (7, 5000, 1 << 21):
        f = np.full((3, n), -np.inf if op == "argmax" else np.inf, np.float32)
        f[1, n // 3 :] = 0.0 if op == "argmax" else -1.0
        for axis in (None, 1):
            np.testing.assert_array_equal(g(gp.asarray(f, device="cuda"), axis=axis).to_numpy(),
                                          fn(f, axis=axis))  # fmt: skip
        i = np.full((2, n), np.iinfo(np.int64).min if op == "argmax" else np.iinfo(np.int64).max)
        np.testing.assert_array_equal(g(gp.asarray(i, device="cuda"), axis=1).to_numpy(),
                                      np.zeros(2))  # fmt: skip
        b = np.zeros((2, n), bool) if op == "argmax" else np.ones((2, n), bool)
        np.testing.assert_array_equal(g(gp.asarray(b, device="cuda"), axis=1).to_numpy(),
                                      np.zeros(2))  # fmt: skip


def test_arg_reduction_rows_with_nan_and_poisoned_output() -> None:
    host = arg_host(dt.float32, 64 * 4099, seed=3).reshape(64, 4099)
    host[5, [9, 4000]] = np.nan
    host[6, :] = 1.5
    x = gp.asarray(host, device="cuda")
    fns = registry().providers["cuda"].kernels
    for op in ("argmax", "argmin"):
        want = getattr(np, op)(host, axis=1, keepdims=True)
        for alternate in (False, True):
            out = poison(gp.empty((64, 1), dtype=gp.int64, device="cuda"), alternate=alternate)
            fns[op].fn(x, out, 1)
            np.testing.assert_array_equal(out.to_numpy(), want, err_msg=op)
        view = x[::-1, 3:]  # unaligned rows: the element-wise loop of the same kernel
        np.testing.assert_array_equal(getattr(gp, op)(view, axis=1).to_numpy(),
                                      getattr(np, op)(host[::-1, 3:], axis=1))  # fmt: skip


# -- row ops ----------------------------------------------------------------------------
RTOL = {"float64": 1e-10, "float32": 2e-5, "float16": 4e-3, "bfloat16": 3e-2}


def rows(d: dt.DataType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(0, 2, shape)
    return x.astype(np.float32).astype(np_dtype(d))


def ref(op: str, x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    f, g, b = (a.astype(np.float64) for a in (x, g, b))
    if op in ("softmax", "log_softmax"):
        s = f - f.max(axis=-1, keepdims=True)
        ls = np.log(np.exp(s).sum(axis=-1, keepdims=True))
        return np.exp(s - ls) if op == "softmax" else s - ls
    if op == "layernorm":
        c = f - f.mean(axis=-1, keepdims=True)
        return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + eps) * g + b
    return f / np.sqrt((f * f).mean(axis=-1, keepdims=True) + eps) * g


def run_op(op: str, x: gp.GPUArray, g: gp.GPUArray, b: gp.GPUArray, out: gp.GPUArray) -> None:
    fns = registry().providers["cuda"].kernels
    if op in ("softmax", "log_softmax"):
        fns[op].fn(x, out, x.ndim - 1)
    elif op == "layernorm":
        fns[op].fn(x, g, b, out, 1e-5)
    else:
        fns[op].fn(x, g, out, 1e-5)


def vector_group(op: str, x: gp.GPUArray, g: gp.GPUArray, b: gp.GPUArray,
                 out: gp.GPUArray) -> int:  # fmt: skip
    from pygpukit_cuda import nn
    from pygpukit_cuda.reductions import _merge

    axis = x.ndim - 1
    kept = _merge([(x.shape[d], x.strides[d], out.strides[d]) for d in range(axis)
                   if x.shape[d] != 1])  # fmt: skip
    params = {"softmax": (None, None), "log_softmax": (None, None), "rmsnorm": (g, None)}
    nrows = math.prod(x.shape[:axis])
    return nn._vector_group(x, out, axis, kept, x.shape[axis], params.get(op, (g, b)), nrows)


@pytest.mark.parametrize("lead", [(2, 3), (70,)], ids=["few-rows", "many-rows"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layernorm", "rmsnorm"])
@pytest.mark.parametrize("d", FLOATS, ids=lambda d: d.name)
def test_row_ops_vector_path(op: str, d: dt.DataType, lead: tuple[int, ...]) -> None:
    v = 16 // d.itemsize
    # lengths on the vector path (a warp, blocks of 64..512) and off it (not a multiple
    # of the vector width; longer than the path holds)
    lengths = [v, 8 * v, 32 * 4 * v + v, 1024, 4096, 4 * 512 * v, 4 * 512 * v + v, 4100]
    for i, n in enumerate(lengths):
        host, gh, bh = rows(d, (*lead, n), i), rows(d, (n,), 100 + i), rows(d, (n,), 200 + i)
        x, g, b = (gp.asarray(a, device="cuda") for a in (host, gh, bh))
        for alternate in (False, True):
            out = poison(gp.empty(host.shape, dtype=d, device="cuda"), alternate=alternate)
            group = vector_group(op, x, g, b, out)
            assert bool(group) == (n % v == 0 and n <= 4 * 512 * v), (n, group)
            run_op(op, x, g, b, out)
            np.testing.assert_allclose(out.to_numpy().astype(np.float64), ref(op, host, gh, bh),
                                       rtol=RTOL[d.name], atol=RTOL[d.name],
                                       err_msg=f"{op} {d.name} n={n}")  # fmt: skip


@pytest.mark.parametrize("op", ["softmax", "layernorm", "rmsnorm"])
def test_row_ops_views_and_mixed_dtypes_fall_back(op: str) -> None:
    d = dt.bfloat16
    host, gh, bh = rows(d, (6, 1032), 1), rows(d, (1024,), 2), rows(d, (1024,), 3)
    x, g, b = (gp.asarray(a, device="cuda") for a in (host, gh, bh))
    cases = [
        (x[:, 8:], g, b, True),  # 16-byte aligned view with a 2064-byte row stride
        (x[:, 1:1025], g, b, False),  # misaligned rows
        (x[::2, 8:], g, b, True),  # every other row
    ]
    g32 = gp.asarray(gh.astype(np.float32), device="cuda")
    if op != "softmax":
        cases.append((x[:, 8:], g32, gp.asarray(bh.astype(np.float32), device="cuda"), False))
    for xv, gv, bv, fast in cases:
        out_dtype = gv.dtype if op != "softmax" else d
        out = poison(gp.empty(xv.shape, dtype=out_dtype, device="cuda"))
        assert bool(vector_group(op, xv, gv, bv, out)) == fast
        run_op(op, xv, gv, bv, out)
        hv = xv.to_numpy()
        want = ref(op, hv, gv.to_numpy(), bv.to_numpy())
        tol = RTOL[out_dtype.name]
        np.testing.assert_allclose(out.to_numpy().astype(np.float64), want, rtol=tol, atol=tol)


def test_row_ops_vector_path_nan_rows() -> None:
    host = rows(dt.bfloat16, (300, 512), 7)
    host[11, 100] = np.nan
    got = gp.softmax(gp.asarray(host, device="cuda")).to_numpy().astype(np.float64)
    assert np.isnan(got[11]).all() and not np.isnan(np.delete(got, 11, axis=0)).any()
