"""Generating the CUDA C of each built-in kernel instance, and listing every instance.

One generic template serves all of them: a grid-stride loop over the output's elements
that finds each operand's byte offset from a `PgkLayout` (shape and byte strides; zero
strides broadcast), loads each input through a runtime dtype switch (so one instance per
op and compute dtype serves every input dtype), or takes it from a scalar argument when
its pointer is null, evaluates one C expression and stores the result in the output dtype.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

from pygpukit import _dtypes as dt
from pygpukit._ops.elementwise import BINARY, UNARY

from .ctypes_table import convert, ctype, load_any, store
from .ops import PREDICATES, binary_expr, unary_expr
from .preamble import MAX_DIMS, MAX_OPERANDS, PREAMBLE

_NAMES = "abc"
#: struct format of PgkLayout: n, ndim, shape[8], strides[4][8]
LAYOUT_FORMAT = f"qq{MAX_DIMS}q{MAX_OPERANDS * MAX_DIMS}q"


@dataclass(frozen=True)
class KernelSpec:
    """One compiled kernel: its extern "C" name, full source and argument layout."""

    name: str
    source: str
    #: struct-module format (native alignment) of the kernel's parameters, in order
    arg_format: str
    #: dtypes the inputs are loaded as (one per input operand)
    inputs: tuple[dt.DataType, ...]
    #: the kernel function alone (source = PREAMBLE + its load helpers + body)
    body: str = ""


def elementwise(
    name: str,
    inputs: tuple[dt.DataType, ...],
    out: dt.DataType,
    expr: str,
    result: dt.DataType,
) -> KernelSpec:
    """out[i] = expr(a, b, c), the inputs loaded as `inputs` dtypes; expr gives `result`."""
    n = len(inputs)
    ptrs = "".join(f", const char* p{k}" for k in range(n))
    codes = "".join(f", int c{k}" for k in range(n))
    scalars = "".join(f", {ctype(d).math} s{k}" for k, d in enumerate(inputs))
    loads = "\n".join(
        f"    {ctype(d).math} {_NAMES[k]} = p{k} ? pgk_load_as_{d.name}(p{k} + o[{k + 1}], c{k})"
        f" : s{k};"
        for k, d in enumerate(inputs)
    )
    helpers = "".join(load_any(d) for d in dict.fromkeys(inputs))
    value = convert(expr, result, out)
    body = (
        f'extern "C" __global__ void {name}(char* out{ptrs}, PgkLayout L{codes}{scalars}) {{\n'
        f"  PGK_GRID_LOOP(i, L.n) {{\n"
        f"    long long o[{n + 1}];\n"
        f"    pgk_offsets<{n + 1}>(L, i, o);\n"
        f"{loads}\n"
        f"    {store(out, 'out + o[0]', value)}\n"
        f"  }}\n}}\n"
    )
    fmt = "@" + "Q" * (n + 1) + LAYOUT_FORMAT + "i" * n
    fmt += "".join(ctype(d).scalar_fmt for d in inputs)
    return KernelSpec(name, PREAMBLE + helpers + body, fmt, inputs, body)


def batch_source(specs: list[KernelSpec]) -> str:
    """One translation unit holding several instances (for building many at once)."""
    loads = dict.fromkeys(d for spec in specs for d in spec.inputs)
    return PREAMBLE + "".join(load_any(d) for d in loads) + "".join(s.body for s in specs)


# -- the instances ---------------------------------------------------------------------
@functools.cache
def copy_kernel(out: dt.DataType) -> KernelSpec:
    """Copy/convert any dtype (or fill with a scalar, pointer null) into `out`'s dtype."""
    return elementwise(f"pgk_copy_{out.name}", (out,), out, "a", out)


@functools.cache
def unary_kernel(op: str, compute: dt.DataType, out: dt.DataType, approximate: str = "none"
                 ) -> KernelSpec:  # fmt: skip
    result = dt.bool_ if op in PREDICATES else compute
    suffix = f"_{approximate}" if op == "gelu" else ""
    return elementwise(
        f"pgk_{op}{suffix}_{compute.name}_{out.name}",
        (compute,), out, unary_expr(op, ctype(compute), approximate), result,
    )  # fmt: skip


@functools.cache
def binary_kernel(op: str, compute: dt.DataType, out: dt.DataType) -> KernelSpec:
    result = out if out is dt.bool_ else compute
    return elementwise(
        f"pgk_{op}_{compute.name}_{out.name}",
        (compute, compute), out, binary_expr(op, ctype(compute)), result,
    )  # fmt: skip


@functools.cache
def where_kernel(out: dt.DataType) -> KernelSpec:
    return elementwise(f"pgk_where_{out.name}", (dt.bool_, out, out), out, "(a ? b : c)", out)


_NUMERIC = dt.NUMERIC_DTYPES
_FLOATS = dt.FLOAT_DTYPES
_INTS = dt.INTEGER_DTYPES


def unary_cases(op: str) -> list[tuple[dt.DataType, dt.DataType]]:
    """(compute, out) pairs an op's kernels are built for."""
    rule = UNARY[op][0]
    if rule == "keep":
        return [(d, d) for d in _NUMERIC]
    if rule == "float":
        return [(d, d) for d in _FLOATS]
    if rule == "to_bool":
        return [(d, dt.bool_) for d in _NUMERIC]
    if rule == "logical":
        return [(d, dt.bool_) for d in (dt.bool_, *_NUMERIC)]
    return [(d, d) for d in (dt.bool_, *_INTS)]  # bitwise


def binary_cases(op: str) -> list[tuple[dt.DataType, dt.DataType]]:
    rule = BINARY[op][0]
    if rule == "arith":
        return [(d, d) for d in _NUMERIC]
    if rule == "float":
        return [(d, d) for d in _FLOATS]
    if rule == "compare":
        return [(d, dt.bool_) for d in _NUMERIC]
    if rule in ("compare_any", "logical"):
        return [(d, dt.bool_) for d in (dt.bool_, *_NUMERIC)]
    if rule == "bitwise":
        return [(d, d) for d in (dt.bool_, *_INTS)]
    return [(d, d) for d in _INTS]  # shift


def all_kernels() -> Iterator[KernelSpec]:
    """Every built-in kernel instance (what the compile test builds)."""
    for d in dt.ALL_DTYPES:
        yield copy_kernel(d)
        yield where_kernel(d)
    for op in UNARY:
        for compute, out in unary_cases(op):
            for approximate in ("none", "tanh") if op == "gelu" else ("none",):
                yield unary_kernel(op, compute, out, approximate)
    for op in BINARY:
        for compute, out in binary_cases(op):
            yield binary_kernel(op, compute, out)
