"""Launch plans on the GPU: the same ops, interleaved over views (strided, offset,
transposed, broadcast), dtypes and scalar positions, so cached plans are reused across
calls; every result checked against NumPy on fresh data, outputs poisoned first."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu

DTYPES = [np.float32, np.float16, np.int32, np.int8, np.float64]


def data(rng: np.random.Generator, dtype: type, shape: tuple[int, ...]) -> np.ndarray:
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(-3, 3, shape).astype(dtype)
    return rng.integers(-20, 20, shape).astype(dtype)


def view(rng: np.random.Generator, h: np.ndarray) -> tuple[gp.GPUArray, np.ndarray]:
    """A device view of some kind holding `h`'s values (and the host twin)."""
    how = int(rng.integers(0, 4))
    if how == 1:  # every other element of a bigger array
        big = np.zeros((*h.shape[:-1], 2 * h.shape[-1]), h.dtype)
        big[..., ::2] = h
        return gp.asarray(big, device="cuda")[..., ::2], h
    if how == 2:  # one element in: an unaligned start
        flat = np.concatenate([np.zeros(1, h.dtype), h.ravel()])
        return gp.asarray(flat, device="cuda")[1:].reshape(h.shape), h
    if how == 3 and h.ndim == 2:  # a transposed view
        return gp.asarray(np.ascontiguousarray(h.T), device="cuda").T, h
    return gp.asarray(h, device="cuda"), h


def test_interleaved_ops_over_views_match_numpy() -> None:
    rng = np.random.default_rng(5)
    for i in range(150):
        dtype = DTYPES[int(rng.integers(0, len(DTYPES)))]
        shape = [(1,), (5,), (33,), (4, 8), (3, 17)][int(rng.integers(0, 5))]
        a, ha = view(rng, data(rng, dtype, shape))
        b, hb = view(rng, data(rng, dtype, shape))
        k = int(rng.integers(0, 6))
        scalar = 3 if not np.issubdtype(dtype, np.floating) else 1.75
        if k == 0:
            got, want = a + b, ha.astype(np.float64) + hb
        elif k == 1:
            got, want = a * scalar, ha.astype(np.float64) * scalar
        elif k == 2:
            got, want = scalar - a, scalar - ha.astype(np.float64)
        elif k == 3:  # a row broadcast against a matrix
            row, hrow = view(rng, data(rng, dtype, shape[-1:]))
            got, want = a + row, ha.astype(np.float64) + hrow
        elif k == 4:
            got, want = gp.maximum(a, b), np.maximum(ha, hb).astype(np.float64)
        else:
            got, want = gp.exp(a.astype(gp.float32)), np.exp(ha.astype(np.float64))
        tol = 2e-3 if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got.to_numpy().astype(np.float64), want, rtol=tol,
                                   atol=tol, err_msg=f"call {i}: case {k} {dtype.__name__} "
                                   f"{shape}")  # fmt: skip


def test_results_overwrite_poisoned_blocks() -> None:
    rng = np.random.default_rng(9)
    for n in (1, 7, 1024, 4099):
        for _ in range(2):  # the second round reuses the plans
            ha, hb = data(rng, np.float32, (n,)), data(rng, np.float32, (n,))
            a, b = gp.asarray(ha, device="cuda"), gp.asarray(hb, device="cuda")
            # a NaN-filled block of the output's size goes back to the pool, which hands it
            # out again for the result: every element must be written
            poison = gp.asarray(np.full(n, np.nan, np.float32), device="cuda")
            del poison
            np.testing.assert_allclose((a + b).to_numpy(), ha + hb, rtol=1e-6)
            poison = gp.asarray(np.full(n, np.nan, np.float32), device="cuda")
            del poison
            np.testing.assert_allclose((a * 0.5).to_numpy(), ha * np.float32(0.5), rtol=1e-6)
