"""matmul on the GPU against NumPy float64 (or exact int64) references: every dtype, odd
sizes, K=1, batches with broadcasting, 1-D promotion, transposed and reversed views,
poisoned outputs; both the cuBLASLt path and the NVRTC kernels (SIMT and mma.sync)."""

from __future__ import annotations

import os

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit.testing import poison
from pygpukit_cuda import cublaslt
from pygpukit_cuda import matmul as mm

pytestmark = pytest.mark.gpu

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["int8", "uint8", "int16", "int32", "int64"]
TOL = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2, "bfloat16": 1e-2}
TF32_TOL = 5e-3
SHAPES = [(64, 64, 64), (37, 53, 29), (1, 7, 1), (5, 1, 9), (130, 67, 300), (1, 1, 1)]


def draw(rng: np.random.Generator, shape: tuple[int, ...], name: str) -> np.ndarray:
    d = dt.as_dtype(name)
    if d.is_integer:
        lo, hi = (0, 40) if d.kind == "u" else (-40, 40)
        return rng.integers(lo, hi, shape).astype(d.to_numpy_dtype())
    return rng.uniform(-2, 2, shape).astype(np.float32).astype(d.to_numpy_dtype())


def reference(a: np.ndarray, b: np.ndarray, name: str) -> np.ndarray:
    d = dt.as_dtype(name)
    if d.is_integer:
        return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(d.to_numpy_dtype())
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def check(got: np.ndarray, want: np.ndarray, name: str, tol: float | None = None) -> None:
    assert got.shape == want.shape
    if dt.as_dtype(name).is_integer:
        np.testing.assert_array_equal(got, want)
        return
    g = got.astype(np.float64)
    assert np.isfinite(g).all(), "an output element was left unwritten (poison) or overflowed"
    err = np.linalg.norm(g - want) / max(np.linalg.norm(want), 1e-300)
    assert err < (tol or TOL[name]), f"relative Frobenius error {err:.2e}"


def run_kernel(kernel, a: gp.GPUArray, b: gp.GPUArray, out_shape, name, tf32=False):  # type: ignore[no-untyped-def]
    out = poison(gp.empty(out_shape, dtype=name, device="cuda"))
    kernel(a, b, out, tf32)
    return out.to_numpy()


@pytest.mark.parametrize("name", FLOATS + INTS)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_2d_products_through_the_provider(name: str, m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a, b = draw(rng, (m, k), name), draw(rng, (k, n), name)
    got = gp.matmul(gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda"))
    check(got.to_numpy(), reference(a, b, name), name)


@pytest.mark.parametrize("name", [*FLOATS, "int32", "int8"])
@pytest.mark.parametrize("path", ["auto", "nvrtc"])
def test_views_batches_and_broadcast(name: str, path: str) -> None:
    kernel = mm.matmul if path == "auto" else mm._nvrtc_matmul
    rng = np.random.default_rng(7)
    cases = []
    # transposed operands (op T through the layout), both sides
    a = draw(rng, (29, 41), name)
    b = draw(rng, (23, 29), name)
    cases.append((gp.asarray(a, device="cuda").mT, gp.asarray(b, device="cuda").mT, a.T, b.T))
    # batched with broadcast of x2 (folds into rows) and of x1 (stride-0 batches)
    a = draw(rng, (3, 4, 17, 19), name)
    b = draw(rng, (19, 21), name)
    ga, gb = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    cases.append((ga, gb.broadcast_to((3, 4, 19, 21)), a, b))
    a1 = draw(rng, (17, 19), name)
    b1 = draw(rng, (3, 19, 21), name)
    cases.append(
        (
            gp.asarray(a1, device="cuda").broadcast_to((3, 17, 19)),
            gp.asarray(b1, device="cuda"),
            a1,
            b1,
        )
    )
    # uneven batch strides (a slice of the batch axis) and reversed rows (a copy is needed)
    a = draw(rng, (6, 2, 9, 11), name)
    b = draw(rng, (3, 2, 11, 5), name)
    ga = gp.asarray(a, device="cuda")[::2]
    cases.append((ga, gp.asarray(b, device="cuda"), a[::2], b))
    a = draw(rng, (13, 8), name)
    b = draw(rng, (8, 6), name)
    cases.append((gp.asarray(a, device="cuda")[::-1], gp.asarray(b, device="cuda"), a[::-1], b))
    for ga, gb, ha, hb in cases:
        want = reference(np.asarray(ha), np.asarray(hb), name)
        got = run_kernel(kernel, ga, gb, want.shape, name)
        check(got, want, name)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (37, 53, 29), (200, 136, 520)])
def test_tensor_core_kernel(name: str, m: int, n: int, k: int) -> None:
    """The mma.sync kernel (float32 means TF32 inputs), called directly."""
    rng = np.random.default_rng(k)
    a, b = draw(rng, (2, m, k), name), draw(rng, (2, k, n), name)
    got = run_kernel(mm._nvrtc_matmul, gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda"),
                     (2, m, n), name, tf32=True)  # fmt: skip
    check(got, reference(a, b, name), name, TF32_TOL if name == "float32" else None)


def test_tf32_setting_uses_tf32_and_stays_within_its_tolerance() -> None:
    rng = np.random.default_rng(3)
    a, b = draw(rng, (256, 512), "float32"), draw(rng, (512, 128), "float32")
    ga, gb = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    want = reference(a, b, "float32")
    with gp.config.use(allow_tf32=True):
        fast = gp.matmul(ga, gb).to_numpy()
    exact = gp.matmul(ga, gb).to_numpy()
    check(fast, want, "float32", TF32_TOL)
    check(exact, want, "float32")


def test_one_dimensional_promotion_and_k_zero() -> None:
    rng = np.random.default_rng(5)
    v, mtx = draw(rng, (6,), "float32"), draw(rng, (6, 4), "float32")
    gv, gm = gp.asarray(v, device="cuda"), gp.asarray(mtx, device="cuda")
    check(gp.matmul(gv, gm).to_numpy(), reference(v, mtx, "float32"), "float32")
    check(gp.matmul(gm.mT, gv).to_numpy(), reference(mtx.T, v, "float32"), "float32")
    check(np.asarray(gp.matmul(gv, gv).to_numpy()), reference(v, v, "float32"), "float32")
    z = gp.matmul(gp.asarray(np.ones((3, 0), np.float32), device="cuda"),
                  gp.asarray(np.ones((0, 2), np.float32), device="cuda"))  # fmt: skip
    np.testing.assert_array_equal(z.to_numpy(), np.zeros((3, 2), np.float32))


def test_offset_output_and_guard_elements() -> None:
    """An output view into a larger buffer: only its own elements are written."""
    rng = np.random.default_rng(11)
    a, b = draw(rng, (9, 7), "bfloat16"), draw(rng, (7, 5), "bfloat16")
    parent = poison(gp.empty((47,), dtype="bfloat16", device="cuda"))
    out = parent[1:46].reshape((9, 5))
    mm.matmul(gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda"), out, False)
    host = parent.to_numpy()
    assert np.isnan(host[0].astype(np.float32)) and np.isnan(host[46].astype(np.float32))
    check(out.to_numpy(), reference(a, b, "bfloat16"), "bfloat16")


def test_bad_inputs_raise_before_launch() -> None:
    a = gp.asarray(np.ones((2, 3), np.float32), device="cuda")
    b = gp.asarray(np.ones((3, 2), np.float64), device="cuda")
    out = gp.empty((2, 2), dtype="float32", device="cuda")
    with pytest.raises(TypeError, match="already be float32"):
        mm.matmul(a, b, out, False)
    with pytest.raises(ValueError, match="not aligned"):
        gp.matmul(a, a)


@pytest.mark.skipif(os.environ.get("PYGPUKIT_CUBLASLT") == "0", reason="cuBLASLt disabled")
def test_cublaslt_is_found_where_nvidia_cublas_is_installed() -> None:
    import importlib.util

    if importlib.util.find_spec("nvidia") is None:
        pytest.skip("no nvidia-* wheels here")
    assert cublaslt.library() is not None, cublaslt.status()


# -- the cuBLASLt hot path: remembered products, the shared workspace, the timed trial ------
needs_lt = pytest.mark.skipif(cublaslt.library() is None, reason="no cuBLASLt here")


@needs_lt
@pytest.mark.parametrize("name", ["bfloat16", "float32"])
def test_repeated_products_reuse_the_plan_with_new_pointers(name: str) -> None:
    """Fresh operands (new pointers, new data) of one shape: one remembered entry, each result
    right; an operand one element off its block's start is another alignment, another entry."""
    rng = np.random.default_rng(21)
    lt = cublaslt.library()
    assert lt is not None
    first: int | None = None
    for i in range(3):
        a, b = draw(rng, (96, 80), name), draw(rng, (80, 112), name)
        got = gp.matmul(gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda"))
        check(got.to_numpy(), reference(a, b, name), name)
        if i == 0:
            first, plans = len(mm._ready), len(cublaslt._plans)
    assert len(mm._ready) == first and len(cublaslt._plans) == plans
    a, b = draw(rng, (97, 80), name), draw(rng, (80, 112), name)
    ga = gp.asarray(a, device="cuda")[1:]  # starts itemsize bytes into its block
    assert (mm._ptr(ga) & 255) != 0
    for _ in range(2):
        got = gp.matmul(ga, gp.asarray(b, device="cuda"))
        check(got.to_numpy(), reference(a[1:], b, name), name)
    assert len(mm._ready) == first + 1


@needs_lt
@pytest.mark.parametrize(
    "shape_a,shape_b",
    [((1, 3), (3, 4097)), ((257, 1), (1, 513)), ((3, 1031), (1031, 5)), ((61, 127), (127, 1)),
     ((5, 33, 17), (5, 17, 65)), ((4, 1, 19, 7), (3, 7, 9))],
)  # fmt: skip
@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_odd_shapes_twice_through_the_hot_path(
    shape_a: tuple[int, ...], shape_b: tuple[int, ...], name: str
) -> None:
    """Each shape twice with fresh data (the second call takes the remembered entry), plain
    and with x1 a transposed view (op T through the layout, no copy)."""
    rng = np.random.default_rng(len(shape_a) * 100 + shape_a[-1])
    for _ in range(2):
        a, b = draw(rng, shape_a, name), draw(rng, shape_b, name)
        want = reference(a, b, name)
        gb = gp.asarray(b, device="cuda")
        got = gp.matmul(gp.asarray(a, device="cuda"), gb)
        check(got.to_numpy(), want, name)
        at = gp.asarray(np.ascontiguousarray(np.swapaxes(a, -1, -2)), device="cuda").mT
        check(gp.matmul(at, gb).to_numpy(), want, name)


@needs_lt
def test_workspace_goes_back_to_the_stream_cache_after_each_product() -> None:
    rng = np.random.default_rng(8)
    a, b = draw(rng, (512, 768), "bfloat16"), draw(rng, (768, 640), "bfloat16")
    ga, gb = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    before = gp.memory.stats("cuda")
    out = gp.matmul(ga, gb)
    check(out.to_numpy(), reference(a, b, "bfloat16"), "bfloat16")
    del out
    assert gp.memory.stats("cuda")["used"] == before["used"]  # no workspace left held
    gp.memory.free_all_cached("cuda")
    again = gp.matmul(ga, gb)  # the next product takes a workspace again
    check(again.to_numpy(), reference(a, b, "bfloat16"), "bfloat16")


@needs_lt
def test_products_on_a_side_stream_take_their_own_workspace() -> None:
    rng = np.random.default_rng(9)
    a, b = draw(rng, (300, 256), "float32"), draw(rng, (256, 200), "float32")
    s = gp.cuda.Stream(non_blocking=True)
    with s:
        ga, gb = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
        outs = [gp.matmul(ga, gb) for _ in range(3)]
        got = [o.to_numpy() for o in outs]
    s.synchronize()
    for g in got:
        check(g, reference(a, b, "float32"), "float32")
    del ga, gb, outs
    s.synchronize()


@needs_lt
@pytest.mark.parametrize("name,tf32", [("float32", True), ("float32", False), ("bfloat16", False)])
def test_timed_trial_keeps_results_right(monkeypatch: pytest.MonkeyPatch, name: str,
                                         tf32: bool) -> None:  # fmt: skip
    """The trial runs the candidates into the output before the real product: the result
    is still the product, exact float32 stays exact, and the choice is remembered."""
    monkeypatch.setattr(cublaslt, "TRIAL_MIN_FLOPS", 0)
    monkeypatch.setenv("PYGPUKIT_CUBLASLT_TRIAL", "1")
    rng = np.random.default_rng(10)
    m, k, n = 328, 456, 200  # a shape no other test plans, so its plan is made here
    a, b = draw(rng, (m, k), name), draw(rng, (k, n), name)
    ga, gb = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    with gp.config.use(allow_tf32=tf32):
        for _ in range(2):
            out = poison(gp.empty((m, n), dtype=name, device="cuda"))
            mm.matmul(ga, gb, out, tf32)
            check(out.to_numpy(), reference(a, b, name), name, TF32_TOL if tf32 else None)
    ready = mm._ready[mm._ready_key(ga, gb, out, tf32, mm._ptr(ga), mm._ptr(gb), mm._ptr(out))]
    plan = ready.plan
    assert type(plan).__name__ == "MatmulPlan"
    assert 0 <= plan.choice < len(plan.workspace_sizes)
