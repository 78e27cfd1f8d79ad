"""Best-effort products in row slices on the GPU: each slice is its own gated launch, and
the result is bit-identical to the whole product's."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_sliced_product_is_identical_to_the_whole(dtype, slicing_shrink):
    # under compute-sanitizer each dimension and the slices are smaller (tests/cuda/conftest.py)
    m, k = 8192 // slicing_shrink, 4096 // slicing_shrink
    rng = np.random.default_rng()
    a = rng.standard_normal((m, k)).astype(np.float32) / 64
    b = rng.standard_normal((k, m)).astype(np.float32) / 64
    x = gp.asarray(a, device="cuda:0").astype(dtype)
    y = gp.asarray(b, device="cuda:0").astype(dtype)
    whole = gp.matmul(x, y).astype("float32").to_numpy()

    def sliced() -> np.ndarray:
        return gp.matmul(x, y).astype("float32").to_numpy()

    with gp.Scheduler(total_memory="8GB", device="cuda:0") as sched:
        task = sched.submit(sliced, policy="best_effort")
        got = task.result(120)
        launches = task.stats()["launches"]
    assert launches >= 3, "the product was not split into gated slices"
    np.testing.assert_array_equal(got, whole)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err < (1e-2 if dtype != "float32" else 1e-3)
