"""The cuda provider's arange, linspace, eye, tril and triu against NumPy, across dtypes,
with strided outputs written directly and batched, strided tril/triu inputs."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit._plugins import registry
from pygpukit.testing import poison

pytestmark = pytest.mark.gpu

NUMERIC = [d for d in dt.NUMERIC_DTYPES if not d.is_float8]


def kernel(op: str):  # type: ignore[no-untyped-def]
    return registry().providers["cuda"].kernels[op].fn


@pytest.mark.parametrize("d", NUMERIC, ids=lambda d: d.name)
def test_arange_linspace_eye(d: dt.DataType) -> None:
    npd = d.to_numpy_dtype()
    got = gp.arange(3, 90, 7, dtype=d, device="cuda").to_numpy()
    np.testing.assert_array_equal(got, np.arange(3, 90, 7).astype(npd))
    if d.is_floating:
        got = gp.arange(-1.5, 2.0, 0.25, dtype=d, device="cuda").to_numpy()
        np.testing.assert_array_equal(got, (-1.5 + np.arange(14) * 0.25).astype(npd))
        for endpoint in (True, False):
            got = gp.linspace(-2, 3, 11, endpoint=endpoint, dtype=d, device="cuda").to_numpy()
            want = np.linspace(-2, 3, 11, endpoint=endpoint).astype(npd)
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       rtol=1e-2 if d.itemsize == 2 else 1e-12)  # fmt: skip
    for k in (-2, 0, 3):
        np.testing.assert_array_equal(gp.eye(5, 7, k=k, dtype=d, device="cuda").to_numpy(),
                                      np.eye(5, 7, k, dtype=npd))  # fmt: skip


def test_large_and_strided_outputs() -> None:
    n = (1 << 22) + 3
    np.testing.assert_array_equal(gp.arange(n, device="cuda").to_numpy(), np.arange(n))
    big = gp.arange(2**40, 2**40 + 5 * 3, 3, device="cuda").to_numpy()
    np.testing.assert_array_equal(big, np.arange(2**40, 2**40 + 15, 3))
    parent = poison(gp.empty((20,), dtype=gp.float32, device="cuda"))
    kernel("arange")(parent[1::2], 2.0, 0.5)
    got = parent.to_numpy()
    np.testing.assert_array_equal(got[1::2], 2.0 + 0.5 * np.arange(10))
    assert np.isnan(got[0::2]).all()  # untouched
    eye_parent = poison(gp.empty((6, 8), dtype=gp.int32, device="cuda"))
    kernel("eye")(eye_parent[:, ::2], 1)
    np.testing.assert_array_equal(eye_parent.to_numpy()[:, ::2], np.eye(6, 4, 1, dtype=np.int32))


@pytest.mark.parametrize("d", dt.ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["tril", "triu"])
def test_triangles(d: dt.DataType, op: str) -> None:
    rng = np.random.default_rng(0)
    host = rng.uniform(1, 5, (2, 3, 6, 9)).astype(np.float32)
    g = gp.asarray(host, device="cuda").astype(d)
    h = g.to_numpy()
    fn = getattr(np, op)
    for k in (-2, 0, 4):
        for view, hv in ((g, h), (g[:, ::2, ::-1, 1::2], h[:, ::2, ::-1, 1::2]),
                         (g.transpose(1, 0, 3, 2), h.transpose(1, 0, 3, 2))):  # fmt: skip
            got = getattr(gp, op)(view, k=k).to_numpy()
            want = np.ascontiguousarray(fn(hv, k))
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_complex_eye_and_triangles(name: str) -> None:
    # the part planes: ones on the real diagonal only, both parts kept or zeroed together
    np.testing.assert_array_equal(gp.eye(3, 4, k=1, dtype=name, device="cuda").to_numpy(),
                                  np.eye(3, 4, k=1, dtype=name))  # fmt: skip
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((2, 4, 5)) + 1j * rng.standard_normal((2, 4, 5))).astype(name)
    x = gp.asarray(a, device="cuda")
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(gp.tril(x, k=k).to_numpy(), np.tril(a, k))
        np.testing.assert_array_equal(gp.triu(x.mT, k=k).to_numpy(),
                                      np.triu(np.swapaxes(a, -1, -2), k))  # fmt: skip
