"""The cuda provider's data-movement kernels against NumPy: concat, roll, repeat, take,
take_along_axis, advanced indexing (gather/scatter/masks), sort/argsort, nonzero and
searchsorted, on strided views, with out-of-range indices found in the kernel."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt

gpu = pytest.mark.gpu
RNG = np.random.default_rng(7)


def on_gpu(h: np.ndarray) -> gp.GPUArray:
    return gp.asarray(h, device="cuda")


def test_family_source_compiles_for_sm90_without_a_gpu() -> None:
    pytest.importorskip("pygpukit_cuda._native")
    from pygpukit_cuda import _loader, compiler
    from pygpukit_cuda.kernels import movement_source as ms

    if not _loader.is_nvrtc_available():
        pytest.skip("no NVRTC")
    ok, image, log = _loader.nvrtc().compile(
        ms.source(), "movement.cu", [*compiler.BASE_OPTIONS, "-arch=sm_90"], True
    )
    assert ok, log
    assert image[:4] == b"\x7fELF"


@gpu
@pytest.mark.parametrize("dtype", ["float32", "int8", "bfloat16", "float64", "bool"])
def test_take_and_take_along_axis(dtype: str) -> None:
    h = (
        (RNG.standard_normal((5, 7, 3)) * 10)
        .astype("float32")
        .astype(np.dtype(dt.as_dtype(dtype).to_numpy_dtype()))
    )
    x = on_gpu(h)[:, ::2]
    hv = h[:, ::2]
    idx = RNG.integers(-4, 4, (2, 3))
    got = gp.take(x, on_gpu(idx), axis=1).to_numpy()
    np.testing.assert_array_equal(got, np.take(hv, idx, axis=1))
    along = RNG.integers(0, 5, (3, 4, 3))
    got = gp.take_along_axis(x, on_gpu(along), axis=0).to_numpy()
    np.testing.assert_array_equal(got, np.take_along_axis(hv, along, axis=0))


@gpu
def test_out_of_range_index_raises_after_the_launch() -> None:
    x = on_gpu(np.arange(10.0))
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 10"):
        gp.take(x, on_gpu(np.array([1, 10, 2])), axis=0)
    with pytest.raises(IndexError):
        x[on_gpu(np.array([-11]))] = 5.0
    np.testing.assert_array_equal(x.to_numpy(), np.arange(10.0))  # scatter checked first


@gpu
def test_gather_scatter_and_masks() -> None:
    h = RNG.standard_normal((6, 5, 4)).astype(np.float32)
    x = on_gpu(h)
    i0, i2 = np.array([[0, 5], [2, -1]]), np.array([1, 3])
    np.testing.assert_array_equal(x[on_gpu(i0), :, on_gpu(i2)].to_numpy(), h[i0, :, i2])
    np.testing.assert_array_equal(x[:, on_gpu(np.array([4, 0]))].to_numpy(), h[:, [4, 0]])
    mask = h[:, :, 0] > 0
    np.testing.assert_array_equal(x[on_gpu(mask)].to_numpy(), h[mask])
    hc = h.copy()
    hc[mask] = 3.5
    x[on_gpu(mask)] = 3.5
    np.testing.assert_array_equal(x.to_numpy(), hc)
    vals = RNG.standard_normal((int(mask.sum()), 4)).astype(np.float32)
    hc[mask] = vals
    x[on_gpu(mask)] = on_gpu(vals)
    np.testing.assert_array_equal(x.to_numpy(), hc)
    rows = np.array([1, 3])
    hc[rows, 2] = -1.0
    x[on_gpu(rows), 2] = -1.0
    np.testing.assert_array_equal(x.to_numpy(), hc)


@gpu
def test_concat_roll_repeat_on_views() -> None:
    a = RNG.standard_normal((4, 6)).astype(np.float32)
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    ga, gb = on_gpu(a), on_gpu(b)
    np.testing.assert_array_equal(
        gp.concat([ga[:, ::2], gb, ga.T[:2].T], axis=1).to_numpy(),
        np.concatenate([a[:, ::2], b, a.T[:2].T], axis=1),
    )
    np.testing.assert_array_equal(
        gp.roll(ga.T, (2, -1), axis=(0, 1)).to_numpy(), np.roll(a.T, (2, -1), (0, 1))
    )
    np.testing.assert_array_equal(gp.repeat(ga, 3, axis=1).to_numpy(), np.repeat(a, 3, 1))
    reps = np.array([0, 2, 1, 3])
    np.testing.assert_array_equal(
        gp.repeat(ga, on_gpu(reps), axis=0).to_numpy(), np.repeat(a, reps, 0)
    )


@gpu
@pytest.mark.parametrize("n", [1, 5, 300, 2048, 5000])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8"])
def test_sort_argsort_stable_nan_last(n: int, dtype: str) -> None:
    npd = np.dtype(dt.as_dtype(dtype).to_numpy_dtype())
    h = RNG.integers(-20, 20, (3, n)).astype(npd)
    if npd.kind == "f":
        h[RNG.random((3, n)) < 0.1] = np.nan
        h[RNG.random((3, n)) < 0.1] = -0.0
    x = on_gpu(h)
    for axis in (1, 0):
        want = np.argsort(h, axis=axis, kind="stable")
        got = gp.argsort(x, axis=axis).to_numpy()
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(
            gp.sort(x, axis=axis).to_numpy(), np.take_along_axis(h, want, axis)
        )
    # descending and stable: equal elements keep their order
    back = np.argsort(h[:, ::-1], axis=1, kind="stable")
    want = (n - 1) - back[:, ::-1]
    np.testing.assert_array_equal(gp.argsort(x, axis=1, descending=True).to_numpy(), want)


@gpu
def test_nonzero_and_searchsorted() -> None:
    h = RNG.integers(-1, 2, (4, 5, 3)).astype(np.float32)
    h[0, 0, 0] = np.nan
    got = gp.nonzero(on_gpu(h)[:, ::2])
    for g, w in zip(got, np.nonzero(h[:, ::2]), strict=True):
        np.testing.assert_array_equal(g.to_numpy(), w)
    sorted_ = np.sort(RNG.standard_normal(50).astype(np.float32))
    sorted_[-3:] = np.nan
    q = RNG.standard_normal((4, 6)).astype(np.float32)
    q[0, 0] = np.nan
    for side in ("left", "right"):
        got = gp.searchsorted(on_gpu(sorted_), on_gpu(q), side=side).to_numpy()
        np.testing.assert_array_equal(got, np.searchsorted(sorted_, q, side))
    perm = RNG.permutation(50)
    unsorted = sorted_[perm]
    sorter = np.argsort(unsorted, kind="stable")
    got = gp.searchsorted(on_gpu(unsorted), on_gpu(q), sorter=on_gpu(sorter)).to_numpy()
    np.testing.assert_array_equal(got, np.searchsorted(unsorted, q, sorter=sorter))
