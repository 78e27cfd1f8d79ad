"""The provider's elementwise kernels, one Triton template (programs/elementwise.py) for
all ops: contiguous operands take the flat path, others their merged strides (<= 4 axes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pygpukit import GPUArray
from pygpukit.backend import DataType, astype

from ..compiled import triton_type
from ..launch import Program
from ..programs import elementwise as ep
from .elementwise_ops import BINARY_OPS, UNARY_OPS

BLOCK = 1024
_MAX_DIMS = 4
_unary = Program(ep.unary)
_binary = Program(ep.binary)


def merge(shape: tuple[int, ...], strides: list[tuple[int, ...]]) -> list[tuple[int, list[int]]]:
    """(size, per-operand element strides) of each axis: size-1 axes dropped, axes that are
    contiguous in every operand merged."""
    out: list[tuple[int, list[int]]] = []
    for d, size in enumerate(shape):
        if size == 1:
            continue
        st = [s[d] for s in strides]
        if out and all(p == q * size for p, q in zip(out[-1][1], st, strict=True)):
            out[-1] = (out[-1][0] * size, st)
        else:
            out.append((size, st))
    return out


def _layout(out: GPUArray, arrays: list[GPUArray | None]) -> tuple[bool, list[int]] | None:
    """(contiguous, [s1, s2, s3, then 4 strides per operand]) or None when more than four
    axes stay after merging."""
    ops = [a for a in arrays if a is not None] + [out]
    strides = [tuple(s // a.dtype.itemsize for s in a.strides) for a in ops]
    dims = merge(out.shape, strides)
    if len(dims) > _MAX_DIMS:
        return None
    contig = len(dims) <= 1 and all(st == 1 for st in (dims[0][1] if dims else []))
    dims = [(1, [0] * len(ops))] * (_MAX_DIMS - len(dims)) + dims
    values = [dims[1][0], dims[2][0], dims[3][0]]
    it = iter(range(len(ops)))
    for a in [*arrays, out]:
        if a is None:
            values += [0] * _MAX_DIMS
        else:
            k = next(it)
            values += [d[1][k] for d in dims]
    return contig, values


def _scalar_type(compute: DataType) -> str:
    return "fp64" if compute.name == "float64" else "fp32"


def _make_unary(op: str) -> Callable[..., None]:
    def kernel(x: GPUArray, out: GPUArray, approximate: str = "none") -> None:
        lay = _layout(out, [x])
        if lay is None:
            x = astype(x, x.dtype, copy=True)
            lay = _layout(out, [x])
            assert lay is not None
        contig, values = lay
        f64 = out.dtype.name == "float64"
        types = (f"*{triton_type(x.dtype.name)}", f"*{triton_type(out.dtype.name)}",
                 *(["i64"] * 11))  # fmt: skip
        consts = (("OP", op), ("APPROX", approximate == "tanh"), ("F64", f64),
                  ("CONTIG", contig), ("BLOCK", BLOCK))  # fmt: skip
        _unary((-(-out.size // BLOCK),), [x, out, out.size, *values], types, consts)

    kernel.__name__ = f"triton_{op}"
    return kernel


def _make_binary(op: str) -> Callable[..., None]:
    def kernel(x1: Any, x2: Any, out: GPUArray, compute: DataType) -> None:
        a = x1 if isinstance(x1, GPUArray) else None
        b = x2 if isinstance(x2, GPUArray) else None
        lay = _layout(out, [a, b])
        if lay is None:
            a = astype(a, a.dtype, copy=True) if a is not None else None
            b = astype(b, b.dtype, copy=True) if b is not None else None
            lay = _layout(out, [a, b])
            assert lay is not None
        contig, values = lay
        st = _scalar_type(compute)
        ta = f"*{triton_type(a.dtype.name)}" if a is not None else st
        tb = f"*{triton_type(b.dtype.name)}" if b is not None else st
        va = a if a is not None else float(x1)
        vb = b if b is not None else float(x2)
        types = (ta, tb, f"*{triton_type(out.dtype.name)}", *(["i64"] * 16))
        f64 = compute.name == "float64"
        consts = (("OP", op), ("A_SCALAR", a is None), ("B_SCALAR", b is None), ("F64", f64),
                  ("CONTIG", contig), ("BLOCK", BLOCK))  # fmt: skip
        _binary((-(-out.size // BLOCK),), [va, vb, out, out.size, *values], types, consts)

    kernel.__name__ = f"triton_{op}"
    return kernel


def kernels() -> dict[str, Callable[..., None]]:
    """op -> kernel for every elementwise op served."""
    table = {op: _make_unary(op) for op in UNARY_OPS}
    table.update({op: _make_binary(op) for op in BINARY_OPS})
    return table
