"""matmul, tensordot, vecdot and matrix_transpose against float64 NumPy references."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from array_layouts import LAYOUTS, host_data, make
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit import _dtypes as dt
from pygpukit._ops._core import kernel_on

FAST = settings(max_examples=50, deadline=None)
NUMERIC = dt.NUMERIC_DTYPES
#: relative Frobenius error allowed against the float64 product of the same inputs
REL_TOL = {gp.float64: 1e-12, gp.float32: 1e-5, gp.float16: 2e-3, gp.bfloat16: 1e-2}


def check_close(got: gp.GPUArray, ref: np.ndarray, dtype: dt.DataType) -> None:
    """Integers exactly (modulo wrap-around); floats within the dtype's relative error."""
    host = got.to_numpy()
    assert got.dtype is dtype
    assert host.shape == ref.shape, (host.shape, ref.shape)
    if dtype.is_integer:
        np.testing.assert_array_equal(host, ref.astype(np.int64).astype(dtype.to_numpy_dtype()))
        return
    err = np.linalg.norm((host.astype(np.float64) - ref).ravel())
    scale = max(np.linalg.norm(ref.ravel()), 1e-30)
    assert err <= REL_TOL[dtype] * scale, f"relative error {err / scale:.3g} for {dtype}"


def ref_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    kind = np.int64 if a.dtype.kind in "iu" and b.dtype.kind in "iu" else np.float64
    return np.matmul(a.astype(kind), b.astype(kind))


@st.composite
def matmul_cases(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shape pairs covering 1-D promotion, batch broadcasting and sizes 0 and 1."""
    m, k, n = (draw(st.integers(0, 5)) for _ in range(3))
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    b1 = tuple(draw(st.sampled_from([d, 1])) for d in batch)[draw(st.integers(0, len(batch))) :]
    b2 = tuple(draw(st.sampled_from([d, 1])) for d in batch)[draw(st.integers(0, len(batch))) :]
    s1 = (k,) if draw(st.integers(0, 4)) == 0 else (*b1, m, k)
    s2 = (k,) if draw(st.integers(0, 4)) == 0 else (*b2, k, n)
    return s1, s2


@FAST
@given(matmul_cases(), st.sampled_from(NUMERIC), st.sampled_from(LAYOUTS),
       st.sampled_from(LAYOUTS), st.integers(0, 2**31))  # fmt: skip
def test_matmul_matches_numpy(shapes: Any, dtype: dt.DataType, l1: str, l2: str, seed: int) -> None:
    s1, s2 = shapes
    a = host_data(dtype, s1, seed)
    b = host_data(dtype, s2, seed + 1)
    got = gp.matmul(make(a, l1), make(b, l2))
    check_close(got, ref_matmul(a, b), dtype)


@FAST
@given(st.sampled_from(NUMERIC), st.sampled_from(NUMERIC), st.integers(0, 2**31))
def test_matmul_promotes_mixed_dtypes(d1: dt.DataType, d2: dt.DataType, seed: int) -> None:
    a = host_data(d1, (3, 4), seed)
    b = host_data(d2, (4, 2), seed + 1)
    want = gp.result_type(d1, d2)
    got = make(a, "contiguous") @ make(b, "transposed")
    # the reference rounds the inputs to the result dtype first, as the core does
    np_want = want.to_numpy_dtype()
    check_close(got, ref_matmul(a.astype(np_want), b.astype(np_want)), want)


@pytest.mark.parametrize(
    ("dtype", "tol"), [(gp.float32, 1e-5), (gp.bfloat16, 1e-2), (gp.float16, 2e-3)]
)
def test_matmul_accuracy_at_k256(dtype: dt.DataType, tol: float) -> None:
    rng = np.random.default_rng(1234)
    a = rng.standard_normal((3, 64, 256)).astype(dtype.to_numpy_dtype())
    b = rng.standard_normal((256, 48)).astype(dtype.to_numpy_dtype())
    got = gp.matmul(gp.from_numpy(a), gp.from_numpy(b)).to_numpy().astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    rel = np.linalg.norm((got - ref).ravel()) / np.linalg.norm(ref.ravel())
    assert rel < tol, rel


def test_half_types_round_once_from_float32() -> None:
    rng = np.random.default_rng(5)
    for dtype in (gp.float16, gp.bfloat16):
        a = rng.standard_normal((8, 32)).astype(dtype.to_numpy_dtype())
        b = rng.standard_normal((32, 8)).astype(dtype.to_numpy_dtype())
        want = (a.astype(np.float32) @ b.astype(np.float32)).astype(dtype.to_numpy_dtype())
        got = gp.matmul(gp.from_numpy(a), gp.from_numpy(b)).to_numpy()
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_integer_matmul_is_exact() -> None:
    a = np.array([[2**40, 3], [1, -(2**40)]], np.int64)
    b = np.array([[5, 1], [7, 1]], np.int64)
    got = gp.matmul(gp.from_numpy(a), gp.from_numpy(b)).to_numpy()
    np.testing.assert_array_equal(got, a @ b)


def test_allow_tf32_setting_reaches_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    from pygpukit.backends.cpu import linalg as cpu_linalg

    real = cpu_linalg.matmul

    def spy(x1: Any, x2: Any, out: Any, allow_tf32: bool) -> None:
        seen.append(allow_tf32)
        real(x1, x2, out, allow_tf32)

    x = gp.from_numpy(host_data(gp.float32, (4, 4), 3))
    plain = gp.matmul(x, x).to_numpy()
    kernel = kernel_on("matmul", x.device, (gp.float32, gp.float32))
    assert getattr(kernel, "__wrapped__", kernel) is real  # the spy replaces exactly it
    import pygpukit._ops.linalg as ops_linalg

    # both paths: the general one (1-D operands) and the 2-D fast path, in settings
    # snapshots made after the spy is in place (each snapshot looks its kernel up once)
    monkeypatch.setattr(ops_linalg, "kernel_on", lambda *a, **k: spy)
    monkeypatch.setattr(
        ops_linalg, "kernel_for", lambda *a, **k: SimpleNamespace(fn=spy, gated=False)
    )
    v = x[0]
    with gp.config.use(allow_tf32=True):
        tf32 = gp.matmul(x, x).to_numpy()
        gp.matmul(v, x)
    with gp.config.use(allow_tf32=False):
        gp.matmul(x, x)
        gp.matmul(v, x)
    assert seen == [True, True, False, False]
    np.testing.assert_array_equal(tf32, plain)  # the CPU ignores the hint


@pytest.mark.parametrize("dtype", [gp.float32, gp.int32, gp.bfloat16])
def test_matmul_kernel_writes_every_element(dtype: dt.DataType) -> None:
    a = make(host_data(dtype, (2, 3, 4), 1), "strided")
    b = make(host_data(dtype, (4, 5), 2), "transposed").broadcast_to((2, 4, 5))
    fill = 7 if dtype.is_integer else np.nan
    out = gp.from_numpy(np.full((2, 3, 5), fill).astype(dtype.to_numpy_dtype()))
    kernel_on("matmul", a.device, (dtype, dtype))(a, b, out, False)
    check_close(out, ref_matmul(a.to_numpy(), b.to_numpy()), dtype)


def test_matmul_k0_gives_zeros() -> None:
    got = gp.matmul(gp.zeros((2, 0)), gp.zeros((0, 3)))
    np.testing.assert_array_equal(got.to_numpy(), np.zeros((2, 3), np.float32))


def test_matmul_errors_name_both_shapes() -> None:
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(4, 5\) are not aligned"):
        gp.matmul(gp.zeros((2, 3)), gp.zeros((4, 5)))
    with pytest.raises(ValueError, match=r"shapes \(3,\) and \(4,\) are not aligned"):
        gp.matmul(gp.zeros((3,)), gp.zeros((4,)))
    with pytest.raises(ValueError, match=r"batch dimensions of shapes \(2, 1, 3\) and \(3, 3, 1\)"):
        gp.matmul(gp.zeros((2, 1, 3)), gp.zeros((3, 3, 1)))
    with pytest.raises(ValueError, match=r"at least one dimension, got shapes \(\) and \(2,\)"):
        gp.matmul(gp.zeros(()), gp.zeros((2,)))
    with pytest.raises(TypeError, match="does not accept bool"):
        gp.matmul(gp.zeros((2, 2), dtype=gp.bool), gp.zeros((2, 2)))
    with pytest.raises(TypeError, match="x2 must be a GPUArray"):
        gp.matmul(gp.zeros((2, 2)), np.zeros((2, 2)))  # type: ignore[arg-type]


@FAST
@given(st.data(), st.sampled_from([gp.float64, gp.float32, gp.int32]), st.integers(0, 2**31))
def test_tensordot_matches_numpy(data: Any, dtype: dt.DataType, seed: int) -> None:
    nd1 = data.draw(st.integers(0, 3))
    nd2 = data.draw(st.integers(0, 3))
    s1 = list(data.draw(st.lists(st.integers(0, 3), min_size=nd1, max_size=nd1)))
    s2 = list(data.draw(st.lists(st.integers(0, 3), min_size=nd2, max_size=nd2)))
    n = data.draw(st.integers(0, min(nd1, nd2)))
    ax1 = data.draw(st.permutations(range(nd1)))[:n]
    ax2 = data.draw(st.permutations(range(nd2)))[:n]
    for i, j in zip(ax1, ax2, strict=True):
        s2[j] = s1[i]
    use_pair = data.draw(st.booleans())
    if not use_pair:  # an int means the last n axes of x1 against the first n of x2
        ax1, ax2 = list(range(nd1 - n, nd1)), list(range(n))
        for i, j in zip(ax1, ax2, strict=True):
            s2[j] = s1[i]
    a = host_data(dtype, tuple(s1), seed)
    b = host_data(dtype, tuple(s2), seed + 1)
    axes: Any = (ax1, ax2) if use_pair else n
    got = gp.tensordot(
        make(a, data.draw(st.sampled_from(LAYOUTS))), make(b, "contiguous"), axes=axes
    )
    kind = np.int64 if dtype.is_integer else np.float64
    check_close(got, np.tensordot(a.astype(kind), b.astype(kind), axes=(ax1, ax2)), dtype)


def test_tensordot_errors() -> None:
    x = gp.zeros((2, 3))
    with pytest.raises(ValueError, match=r"axis 1 of x1 \(shape \(2, 3\)\) has size 3 but axis 0"):
        gp.tensordot(x, gp.zeros((4, 2)), axes=([1], [0]))
    with pytest.raises(ValueError, match=r"axes=3 must be in \[0, 2\]"):
        gp.tensordot(x, x, axes=3)
    with pytest.raises(ValueError, match="different numbers of axes"):
        gp.tensordot(x, x, axes=([0, 1], [0]))


@FAST
@given(st.data(), st.sampled_from(NUMERIC), st.integers(0, 2**31))
def test_vecdot_matches_numpy(data: Any, dtype: dt.DataType, seed: int) -> None:
    k = data.draw(st.integers(0, 5))
    batch = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    nd_extra = data.draw(st.integers(0, 1))
    pos = data.draw(st.integers(0, len(batch)))  # where the contracted axis sits
    s1 = (*batch[:pos], k, *batch[pos:])
    s2_batch = tuple(data.draw(st.sampled_from([d, 1])) for d in batch)
    s2 = (*s2_batch[:pos], k, *s2_batch[pos:])[data.draw(st.integers(0, pos)) :]
    if nd_extra:
        s1 = (2, *s1)
    axis = pos - len(batch) - 1
    a = host_data(dtype, s1, seed)
    b = host_data(dtype, s2, seed + 1)
    got = gp.vecdot(make(a, data.draw(st.sampled_from(LAYOUTS))), make(b, "reversed"), axis=axis)
    kind = np.int64 if dtype.is_integer else np.float64
    check_close(got, np.sum(a.astype(kind) * b.astype(kind), axis=axis), dtype)


def test_vecdot_errors() -> None:
    with pytest.raises(ValueError, match=r"differ along axis -1 \(3 vs 4\)"):
        gp.vecdot(gp.zeros((2, 3)), gp.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"axis 0 must be in \[-2, -1\]"):
        gp.vecdot(gp.zeros((2, 3)), gp.zeros((2, 3)), axis=0)


@FAST
@given(st.lists(st.integers(0, 4), min_size=2, max_size=4), st.integers(0, 2**31))
def test_matrix_transpose_is_a_view(shape: list[int], seed: int) -> None:
    a = host_data(gp.float32, tuple(shape), seed)
    x = gp.from_numpy(a)
    got = gp.matrix_transpose(x)
    np.testing.assert_array_equal(got.to_numpy(), np.swapaxes(a, -1, -2))
    assert got.buffer is x.buffer
    with pytest.raises(ValueError, match=r"at least 2 dimensions, got shape \(3,\)"):
        gp.matrix_transpose(gp.zeros((3,)))


def test_operators_and_explicit_backend() -> None:
    a = host_data(gp.float64, (3, 3), 8)
    b = host_data(gp.float64, (3,), 9)
    x, v = gp.from_numpy(a), gp.from_numpy(b)
    check_close(x @ v, a @ b, gp.float64)
    check_close(gp.matmul(x, x, backend="cpu"), a @ a, gp.float64)
    y = x.copy()
    y @= x
    check_close(y, a @ a, gp.float64)
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        gp.matmul(x, x, backend="nope")
