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


def test_a_best_effort_products_algorithm_trial_gives_way_between_runs(monkeypatch):
    # the first call of a decode-shaped product times cuBLASLt's candidates on it (dozens of
    # runs, each after an L2-sized pass): inside a best-effort task it yields before each
    # timed run, as a sliced product does between slices; outside one it never yields
    from pygpukit_cuda import cublaslt, slicing

    if cublaslt.library() is None:
        pytest.skip("no cuBLASLt here")
    monkeypatch.setenv("PYGPUKIT_CUBLASLT_TRIAL", "auto")
    trials: list[int] = []
    yields: list[int] = []
    real_trial, real_yield = cublaslt._trial, slicing.between_slices

    def counted_trial(*args):
        trials.append(len(yields))
        real_trial(*args)

    def counted_yield():
        yields.append(1)
        real_yield()

    monkeypatch.setattr(cublaslt, "_trial", counted_trial)
    monkeypatch.setattr(slicing, "between_slices", counted_yield)
    rng = np.random.default_rng()

    def product(m: int, k: int, n: int):
        # shapes no other test plans, so that this call is the one that plans and tries
        a = rng.standard_normal((m, k)).astype(np.float32) / 32
        b = rng.standard_normal((k, n)).astype(np.float32) / 32
        x = gp.asarray(a, device="cuda:0").astype("bfloat16")
        y = gp.asarray(b, device="cuda:0").astype("bfloat16")
        ref = x.astype("float32").to_numpy().astype(np.float64) @ y.astype("float32").to_numpy()
        return ref, lambda: gp.matmul(x, y).astype("float32").to_numpy()

    ref, run = product(11, 1344, 1728)  # over 8 rows: cuBLASLt, not gemv.py
    np.testing.assert_allclose(run(), ref, rtol=2e-2, atol=2e-2)
    assert trials == [0] and yields == [], "the trial outside a task should run without yielding"

    ref, run = product(13, 1408, 1856)
    with gp.Scheduler(total_memory="8GB", device="cuda:0") as sched:
        got = sched.submit(run, policy="best_effort").result(120)
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2)
    assert len(trials) == 2, "the best-effort product was not tried"
    # at least one timed run of the heuristic's first candidate and of one other
    assert len(yields) >= 2, f"the trial yielded {len(yields)} times"
