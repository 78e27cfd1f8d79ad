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
    check_sliced_is_whole(dtype, 8192 // slicing_shrink, 4096 // slicing_shrink)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_slices_of_small_products_run_the_whole_products_algorithm(dtype, monkeypatch):
    # 1024 x 512 @ 512 x 1024 in 128-row slices: left to itself cuBLASLt picks another float32
    # algorithm for a slice's shape than for the whole (it did on the H100: 1-ulp differences)
    from pygpukit_cuda import slicing

    monkeypatch.setattr(slicing, "SLICE_FLOPS", slicing.SLICE_FLOPS // 2048)
    monkeypatch.setattr(slicing, "ROW_STEP", slicing.ROW_STEP // 8)
    check_sliced_is_whole(dtype, 1024, 512)


def check_sliced_is_whole(dtype: str, m: int, k: int) -> None:
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
