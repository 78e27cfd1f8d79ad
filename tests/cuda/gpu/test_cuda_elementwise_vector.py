"""The elementwise kernels' vector path (contiguous operands, or rows with a broadcast
operand) gives the same bits as their strided path, for full and partial groups, mixed
input dtypes, scalars and astype from float32."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt

pytestmark = pytest.mark.gpu

SIZES = [1, 3, 17, 64, 1000, 4099]
DTYPES = [dt.float32, dt.bfloat16, dt.float16, dt.float64, dt.int8, dt.int32, dt.bool_]


def host(dtype: dt.DataType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.is_integer:
        return rng.integers(1, 50, shape).astype(dtype.to_numpy_dtype())
    return rng.uniform(-3, 3, shape).astype(dtype.to_numpy_dtype())


def strided(h: np.ndarray) -> gp.GPUArray:
    """The same values as a view with a gap between elements: the strided path."""
    big = np.zeros((*h.shape, 2), dtype=h.dtype)
    big[..., 0] = h
    return gp.asarray(big, device="cuda")[..., 0]


def bits(x: gp.GPUArray) -> np.ndarray:
    return np.ascontiguousarray(x.to_numpy()).view(np.uint8)


def same(got: gp.GPUArray, want: gp.GPUArray, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, what
    np.testing.assert_array_equal(bits(got), bits(want), err_msg=what)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_vector_path_matches_strided_path(dtype: dt.DataType) -> None:
    for n in SIZES:
        a, b = host(dtype, (n,), 1), host(dtype, (n,), 2)
        ga, gb = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
        sa, sb = strided(a), strided(b)
        if dtype.kind != "b":
            same(gp.add(ga, gb), gp.add(sa, sb), f"add {dtype.name} n={n}")
            same(gp.multiply(ga, 3), gp.multiply(sa, 3), f"multiply scalar {dtype.name} n={n}")
            same(gp.less(ga, gb), gp.less(sa, sb), f"less {dtype.name} n={n}")
        if dtype.is_floating:
            same(gp.exp(ga), gp.exp(sa), f"exp {dtype.name} n={n}")
            same(gp.floor_divide(ga, gb), gp.floor_divide(sa, sb), f"fdiv {dtype.name} n={n}")
        cond = host(dt.bool_, (n,), 3)
        gc, sc = gp.asarray(cond, device="cuda"), strided(cond)
        same(gp.where(gc, ga, gb), gp.where(sc, sa, sb), f"where {dtype.name} n={n}")
        # an offset view (misaligned for the vector path) and a tail
        if n > 1:
            op = gp.logical_and if dtype.kind == "b" else gp.add
            same(op(ga[1:], gb[1:]), op(sa[1:], sb[1:]), f"offset {dtype.name} n={n}")


@pytest.mark.parametrize("dst", [dt.bfloat16, dt.float16, dt.float64, dt.float32, dt.int32,
                                 dt.float8_e4m3fn, dt.float8_e5m2, dt.bool_],
                         ids=lambda d: d.name)  # fmt: skip
def test_astype_vector_path_matches_strided_path(dst: dt.DataType) -> None:
    for src in (dt.float32, dt.int32, dt.bfloat16):
        for n in SIZES:
            h = host(src, (n,), 4)
            if src is dt.float32 and n > 8:
                h[:8] = [0.0, -0.0, np.inf, -np.inf, 65520.0, 1e-9, 3.0e38, 1 + 2**-20]
            same(gp.asarray(h, device="cuda").astype(dst), strided(h).astype(dst),
                 f"{src.name}->{dst.name} n={n}")  # fmt: skip


def test_mixed_input_dtypes_on_the_vector_path() -> None:
    for n in SIZES:
        i8, f32 = host(dt.int8, (n,), 5), host(dt.float32, (n,), 6)
        h = host(dt.float16, (n,), 7)
        gi, gf, gh = (gp.asarray(x, device="cuda") for x in (i8, f32, h))
        si, sf, sh = strided(i8), strided(f32), strided(h)
        same(gp.add(gi, gf), gp.add(si, sf), f"int8+float32 n={n}")
        same(gp.multiply(gh, gf), gp.multiply(sh, sf), f"float16*float32 n={n}")


@pytest.mark.parametrize("dtype", [dt.float32, dt.bfloat16, dt.int8, dt.float64],
                         ids=lambda d: d.name)  # fmt: skip
def test_row_broadcast_matches_strided_path(dtype: dt.DataType) -> None:
    for rows, cols in ((64, 48), (7, 64), (5, 50), (3, 16)):
        x, r = host(dtype, (rows, cols), 8), host(dtype, (cols,), 9)
        gx, gr = gp.asarray(x, device="cuda"), gp.asarray(r, device="cuda")
        sx, sr = strided(x), strided(r)
        same(gp.add(gx, gr), gp.add(sx, sr), f"add rows {dtype.name} {rows}x{cols}")
        same(gp.subtract(gr, gx), gp.subtract(sr, sx), f"sub rows {dtype.name} {rows}x{cols}")
        # rows of a wider array (row stride a multiple of 16 bytes, and not)
        wide = host(dtype, (rows, cols + 16), 10)
        gw, sw = gp.asarray(wide, device="cuda")[:, :cols], strided(wide)[:, :cols]
        same(gp.multiply(gw, gr), gp.multiply(sw, sr), f"mul view rows {dtype.name}")
