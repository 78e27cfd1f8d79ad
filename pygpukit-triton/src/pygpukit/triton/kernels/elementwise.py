"""The provider's elementwise kernels, one Triton template (programs/elementwise.py) for
all ops: contiguous operands take the flat path, others their merged strides (<= 4 axes).

Hot path: a launch plan per (op, dtypes, shapes, strides, alignment) with the sizes and
strides packed in, so a call passes only its pointers (and a scalar operand's value).

Fast path: each unary and binary kernel carries ``fresh``, pygpukit-cuda's native
FreshElementwise (`pygpukit_cuda.fresh`). A plan made for contiguous operands of one
dtype and shape, every pointer 16-byte aligned, is taught to it: its slots are exactly the
(out, x1[, x2]) pointers, and all else it packs in (the element count, Triton's trailing
scratch pointers) depends only on the element count the fast path keys on. The core then
calls ``fresh(x1[, x2])`` and no Python frame runs between the operator and the driver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pygpukit import GPUArray
from pygpukit.backend import DataType, astype

from ..availability import interpret
from ..compiled import triton_type
from ..launch import Program, forget_with_plans, stream
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


def _ptr(a: GPUArray) -> int:
    return a._buffer.ptr + a._offset


def _new_fresh(arity: int) -> Any:
    """The native fast path for a kernel of `arity` arrays, or None: under the interpreter
    (host arrays, a provider that gates no launches natively) or without the extension."""
    if interpret():
        return None
    from pygpukit_cuda import fresh

    found = fresh.new(arity)
    if found is not None:
        forget_with_plans(found)  # it holds plans: clear_plans must drop them too
    return found


def _teach(found: Any, plan: Any, out: GPUArray, inputs: list[Any], aligned: bool) -> None:
    """Teach `found` the `plan` just bound for `inputs` when the fast path may replay it:
    contiguous operands of out's dtype and shape, all aligned (the plan was compiled with
    every pointer aligned, and the fast path keys on the inputs' alignment alone)."""
    if found is None or not aligned or any(x._dtype is not out._dtype for x in inputs):
        return
    from pygpukit_cuda import fresh

    if len(found) > _MAX_FRESH:
        found.clear()  # endlessly new sizes: start over rather than grow
    fresh.teach(found, out, inputs, plan, True)


#: learned sizes a fast path holds before it starts over
_MAX_FRESH = 1024


def _make_unary(op: str) -> Callable[..., None]:
    plans: dict[tuple[Any, ...], Callable[..., None]] = {}
    fresh = _new_fresh(1)

    def slow(key: tuple[Any, ...], x: GPUArray, out: GPUArray, approximate: str) -> None:
        lay = _layout(out, [x])
        if lay is None:
            x = astype(x, x.dtype, copy=True)  # five unmergeable axes: read a packed copy
            lay = _layout(out, [x])
            assert lay is not None
            key = ()  # the copy's layout is not the key's: no plan kept
        contig, values = lay
        f64 = out.dtype.name == "float64"
        types = (f"*{triton_type(x.dtype.name)}", f"*{triton_type(out.dtype.name)}",
                 *(["i64"] * 11))  # fmt: skip
        consts = (("OP", op), ("APPROX", approximate == "tanh"), ("F64", f64),
                  ("CONTIG", contig), ("BLOCK", BLOCK))  # fmt: skip
        grid = (-(-out.size // BLOCK),)
        args = [x, out, out.size, *values]
        if interpret() or not key:
            _unary(grid, args, types, consts)
            return
        # slots (out, x): the order the fast path writes its pointers in
        plan = _unary.bound(plans, key, grid, args, types, consts, (1, 0))
        if contig and approximate == "none":
            _teach(fresh, plan, out, [x], key[-1])
        plan(stream(key[0]), _ptr(out), _ptr(x))

    def kernel(x: GPUArray, out: GPUArray, approximate: str = "none") -> None:
        p = out._buffer.ptr + out._offset
        q = x._buffer.ptr + x._offset
        key = (out._device.index, out._shape, out._strides, out._dtype.name, x._strides,
               x._dtype.name, approximate, not (p | q) & 15)  # fmt: skip
        plan = plans.get(key)
        if plan is None:
            slow(key, x, out, approximate)
        else:
            plan(stream(key[0]), p, q)

    kernel.__name__ = f"triton_{op}"
    kernel.fresh = fresh  # type: ignore[attr-defined]
    return kernel


def _make_binary(op: str) -> Callable[..., None]:
    plans: dict[tuple[Any, ...], Callable[..., None]] = {}
    fresh = _new_fresh(2)

    def slow(key: tuple[Any, ...], x1: Any, x2: Any, out: GPUArray, compute: DataType) -> None:
        a = x1 if isinstance(x1, GPUArray) else None
        b = x2 if isinstance(x2, GPUArray) else None
        lay = _layout(out, [a, b])
        if lay is None:
            a = astype(a, a.dtype, copy=True) if a is not None else None
            b = astype(b, b.dtype, copy=True) if b is not None else None
            lay = _layout(out, [a, b])
            assert lay is not None
            key = ()
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
        grid = (-(-out.size // BLOCK),)
        args = [va, vb, out, out.size, *values]
        if interpret() or not key:
            _binary(grid, args, types, consts)
            return
        # slots (out, a, b): the order the fast path writes its pointers in
        plan = _binary.bound(plans, key, grid, args, types, consts, (2, 0, 1))
        if contig and a is not None and b is not None and compute is out.dtype:
            _teach(fresh, plan, out, [a, b], key[-1])
        plan(stream(key[0]), _ptr(out), _value(va), _value(vb))

    def kernel(x1: Any, x2: Any, out: GPUArray, compute: DataType) -> None:
        p = out._buffer.ptr + out._offset
        key: tuple[Any, ...]
        if type(x1) is GPUArray and type(x2) is GPUArray:
            q1 = x1._buffer.ptr + x1._offset
            q2 = x2._buffer.ptr + x2._offset
            key = (out._device.index, out._shape, out._strides, out._dtype.name, compute.name,
                   x1._strides, x1._dtype.name, x2._strides, x2._dtype.name,
                   not (p | q1 | q2) & 15)  # fmt: skip
            plan = plans.get(key)
            if plan is not None:
                plan(stream(key[0]), p, q1, q2)
                return
        else:
            aligned = not (p | _addr(x1) | _addr(x2)) & 15
            key = (out._device.index, out._shape, out._strides, out._dtype.name, compute.name,
                   _shape_key(x1), _shape_key(x2), aligned)  # fmt: skip
            plan = plans.get(key)
            if plan is not None:
                plan(stream(key[0]), p, _value(x1), _value(x2))
                return
        slow(key, x1, x2, out, compute)

    kernel.__name__ = f"triton_{op}"
    kernel.fresh = fresh  # type: ignore[attr-defined]
    return kernel


def _shape_key(x: Any) -> Any:
    """A scalar operand keys by being one; an array by its strides and dtype."""
    return (x._strides, x._dtype.name) if isinstance(x, GPUArray) else None


def _addr(x: Any) -> int:
    return _ptr(x) if isinstance(x, GPUArray) else 0


def _value(x: Any) -> Any:
    """What a plan's slot takes: an array's address, or a scalar operand as a float."""
    return _ptr(x) if isinstance(x, GPUArray) else float(x)


_swiglu = _make_binary("swiglu")


def swiglu(gate: GPUArray, up: GPUArray, out: GPUArray) -> None:
    """out = silu(gate) * up (same shapes; the `swiglu` op this plugin registers)."""
    _swiglu(gate, up, out, out.dtype)


def kernels() -> dict[str, Callable[..., None]]:
    """op -> kernel for every elementwise op served."""
    table = {op: _make_unary(op) for op in UNARY_OPS}
    table.update({op: _make_binary(op) for op in BINARY_OPS})
    table["swiglu"] = swiglu
    return table
