"""The provider's row kernels: softmax, log_softmax, layernorm, rmsnorm (conventions of
``pygpukit._ops.nn``), launched on strided rows in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pygpukit import GPUArray
from pygpukit.backend import astype

from ..availability import interpret
from ..compiled import triton_type
from ..launch import Program, stream
from ..programs import rows as rp

_OPS = {"softmax": 0, "log_softmax": 1, "layernorm": 2, "rmsnorm": 3}
#: the longest row kept whole in registers; longer rows stream (rows_loop)
TILE_MAX = 8192
_tile = Program(rp.rows_tile)
_loop = Program(rp.rows_loop)


def _merge(dims: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """(size, x stride, out stride) of the row axes, size-1 axes dropped, contiguous
    neighbours merged (outermost first)."""
    out: list[tuple[int, int, int]] = []
    for size, sx, so in dims:
        if size == 1:
            continue
        if out and out[-1][1] == sx * size and out[-1][2] == so * size:
            prev = out.pop()
            out.append((prev[0] * size, sx, so))
        else:
            out.append((size, sx, so))
    return out


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


_plans: dict[tuple[Any, ...], Callable[..., None]] = {}


def _ptr(a: GPUArray | None) -> int:
    return 0 if a is None else a._buffer.ptr + a._offset


def _desc(a: GPUArray | None) -> Any:
    return None if a is None else (a._strides, a._dtype.name)


def run_rows(op: str, x: GPUArray, out: GPUArray, axis: int, gamma: GPUArray | None = None,
             beta: GPUArray | None = None, eps: float = 0.0) -> None:  # fmt: skip
    """Launch `op` over the rows of x along `axis` into out (hot path: a kept plan that
    takes the four pointers and eps)."""
    px, po, pg, pb = _ptr(x), _ptr(out), _ptr(gamma), _ptr(beta)
    aligned = not (px | po | pg | pb) & 15
    key = (op, x._device.index, x._shape, x._strides, x._dtype.name, out._strides,
           out._dtype.name, axis, _desc(gamma), _desc(beta), aligned)  # fmt: skip
    plan = _plans.get(key)
    if plan is not None:
        plan(stream(key[1]), px, po, pg or px, pb or px, eps)
        return
    _slow(key, op, x, out, axis, gamma, beta, eps)


def _slow(key: tuple[Any, ...], op: str, x: GPUArray, out: GPUArray, axis: int,
          gamma: GPUArray | None, beta: GPUArray | None, eps: float) -> None:  # fmt: skip
    ix, io = x.dtype.itemsize, out.dtype.itemsize
    for name, a in (("x", x), ("out", out)):
        if any(s % a.dtype.itemsize for s in a.strides):
            raise ValueError(f"{op}: {name} has a stride that is not a whole element")
    dims = _merge([(x.shape[d], x.strides[d] // ix, out.strides[d] // io)
                   for d in range(x.ndim) if d != axis])  # fmt: skip
    if len(dims) > 3:
        x = astype(x, x.dtype, copy=True)  # four unmergeable outer axes: read a packed copy
        _slow((), op, x, out, axis, gamma, beta, eps)
        return
    dims = [(1, 0, 0)] * (3 - len(dims)) + dims
    nrows = dims[0][0] * dims[1][0] * dims[2][0]
    n = x.shape[axis]
    if nrows == 0 or n == 0:
        return
    if gamma is not None and gamma.strides[0] != gamma.dtype.itemsize:
        gamma = astype(gamma, gamma.dtype, copy=True)
        key = ()  # the plan would be for the copy's layout
    if beta is not None and beta.strides[0] != beta.dtype.itemsize:
        beta = astype(beta, beta.dtype, copy=True)
        key = ()
    g = gamma if gamma is not None else x  # an unused pointer the kernel never reads
    b = beta if beta is not None else x
    f64 = "float64" in (x.dtype.name, out.dtype.name)
    args: list[Any] = [x, out, g, b, nrows, n, dims[1][0], dims[2][0],
                       dims[0][1], dims[1][1], dims[2][1], x.strides[axis] // ix,
                       dims[0][2], dims[1][2], dims[2][2], out.strides[axis] // io,
                       eps]  # fmt: skip
    types = (f"*{triton_type(x.dtype.name)}", f"*{triton_type(out.dtype.name)}",
             f"*{triton_type(g.dtype.name)}", f"*{triton_type(b.dtype.name)}",
             "i32", "i32", "i32", "i32", "i64", "i64", "i64", "i64", "i64", "i64", "i64",
             "i64", "fp32")  # fmt: skip
    block = _pow2(n)
    if block <= TILE_MAX:
        rows = max(1, min(16, 2048 // block))
        warps = 1 if block * rows <= 256 else 4 if block * rows <= 2048 else 8
        program, grid = _tile, (-(-nrows // rows),)
        consts: tuple[tuple[str, Any], ...] = (("OP", _OPS[op]), ("F64", f64), ("ROWS", rows),
                                               ("BLOCK", block))  # fmt: skip
    else:
        program, grid, warps = _loop, (nrows,), 8
        consts = (("OP", _OPS[op]), ("F64", f64), ("BLOCK", 4096))
    if interpret() or not key:
        program(grid, args, types, consts, num_warps=warps)
        return
    plan = program.bound(_plans, key, grid, args, types, consts, (0, 1, 2, 3, 16), warps)
    plan(stream(x._device.index), _ptr(x), _ptr(out), _ptr(g), _ptr(b), eps)


def softmax(x: GPUArray, out: GPUArray, axis: int) -> None:
    run_rows("softmax", x, out, axis)


def log_softmax(x: GPUArray, out: GPUArray, axis: int) -> None:
    run_rows("log_softmax", x, out, axis)


def layernorm(x: GPUArray, gamma: GPUArray, beta: GPUArray, out: GPUArray, eps: float) -> None:
    run_rows("layernorm", x, out, x.ndim - 1, gamma, beta, eps)


def rmsnorm(x: GPUArray, gamma: GPUArray, out: GPUArray, eps: float) -> None:
    run_rows("rmsnorm", x, out, x.ndim - 1, gamma, None, eps)
