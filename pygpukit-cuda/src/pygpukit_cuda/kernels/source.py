"""Generating the CUDA C of each built-in kernel instance, and listing every instance.

One generic template serves all of them: a grid-stride loop over the output's elements
that finds each operand's byte offset from a `PgkLayout` (shape and byte strides; zero
strides broadcast), loads each input through a runtime dtype switch (so one instance per
op and compute dtype serves every input dtype), or takes it from a scalar argument when
its pointer is null, evaluates one C expression and stores the result in the output dtype.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass

from pygpukit.backend import BINARY, UNARY
from pygpukit.core import dtypes as dt

from .ctypes_table import convert, ctype, load, load_any, store
from .ops import PREDICATES, binary_expr, unary_expr
from .preamble import MAX_DIMS, MAX_OPERANDS, PDL_WAIT, PREAMBLE

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
    #: elements per thread on the vector path (see `_vector_path`)
    vec: int = 1


def _vec_width(inputs: tuple[dt.DataType, ...], out: dt.DataType) -> int:
    """Elements per thread on the contiguous path: 16 bytes of the widest operand."""
    return max(1, 16 // max(d.itemsize for d in (out, *inputs)))


def _vec_type(nbytes: int) -> tuple[str, int]:
    """(C type, count) moving `nbytes` bytes with the widest aligned accesses."""
    if nbytes >= 16:
        return "uint4", nbytes // 16
    return {8: "uint2", 4: "unsigned", 2: "unsigned short", 1: "unsigned char"}[nbytes], 1


def _vec_load(k: int, d: dt.DataType, v: int, from_f32: bool) -> str:
    """C statements filling `A{k}[0..v)` (math type of d) for the group at element `base`
    with 16-byte loads: input k's dtype is d (or float32 into a float compute type), or
    the scalar when the pointer is null; any other dtype sends the group to the
    element-by-element path (`vec = false`)."""
    c = ctype(d)

    def union_load(src: dt.DataType, each: str) -> str:
        s = ctype(src)
        vt, cnt = _vec_type(v * src.itemsize)
        return (
            f"      union {{ {vt} v[{cnt}]; {s.storage} e[{v}]; }} u;\n"
            f"      const {vt}* q = (const {vt}*)(p{k} + pgk_group_offset(L, {k + 1}, row, col));\n"
            f"      #pragma unroll\n      for (int c = 0; c < {cnt}; ++c) u.v[c] = q[c];\n"
            f"      #pragma unroll\n      for (int j = 0; j < {v}; ++j) A{k}[j] = {each};\n"
        )

    text = (
        f"    {c.math} A{k}[{v}];\n"
        f"    if (!p{k}) {{\n"
        f"      #pragma unroll\n      for (int j = 0; j < {v}; ++j) A{k}[j] = s{k};\n"
        f"    }} else if (c{k} == {c.code}) {{\n{union_load(d, load(d, '(const char*)&u.e[j]'))}"
    )
    if from_f32 and c.is_float_math and d is not dt.float32:
        # float32 into a float compute type: what pgk_load_as_<d> does with a float32 code
        wide = "(double)u.e[j]"
        each = f"pgk_d2f_odd({wide})" if d is dt.float16 else f"(({c.math}){wide})"
        text += f"    }} else if (c{k} == {ctype(dt.float32).code}) {{\n"
        text += union_load(dt.float32, each)
    return text + "    } else {\n      vec = false;\n    }\n"


def _vector_path(
    inputs: tuple[dt.DataType, ...], out: dt.DataType, value: str, from_f32: bool
) -> str:
    """The kernel's vector path, which the launcher selects with L.ndim 0 (every array
    operand contiguous over one merged dimension) or -2 (rows of unit-stride elements, row
    strides multiples of 16 bytes, broadcast rows allowed), with 16-byte aligned arrays
    and n < 2^31: each thread takes one group of V consecutive elements (32-bit indices)
    and loads and stores it with 16-byte accesses, evaluating the same per-element
    expression as the strided path. A partial last group, or an input of another dtype,
    goes through the per-element loop below over just the group's elements."""
    v = _vec_width(inputs, out)
    o = ctype(out)
    vt, cnt = _vec_type(v * out.itemsize)
    loads = textwrap.indent(
        "".join(_vec_load(k, d, v, from_f32) for k, d in enumerate(inputs)), "  "
    )
    args = "".join(f" {ctype(d).math} {_NAMES[k]} = A{k}[j];" for k, d in enumerate(inputs))
    return (
        f"  long long i0, i1, step;\n"
        f"  if (L.ndim <= 0) {{\n"
        f"    const unsigned n = (unsigned)L.n;\n"
        f"    const unsigned base = (blockIdx.x * blockDim.x + threadIdx.x) * {v}u;\n"
        f"    if (base >= n) return;\n"
        f"    unsigned row = 0, col = base;\n"
        f"    if (L.ndim == -2) {{\n"
        f"      const unsigned m = (unsigned)L.shape[1];\n"
        f"      row = base / m;\n"
        f"      col = base - row * m;\n"
        f"    }}\n"
        f"    bool vec = n - base >= {v}u;\n"
        f"    if (vec) {{\n"
        f"{loads}"
        f"      if (vec) {{\n"
        f"      union {{ {vt} v[{cnt}]; {o.storage} e[{v}]; }} r;\n"
        f"      #pragma unroll\n"
        f"      for (int j = 0; j < {v}; ++j) {{{args}\n"
        f"        {store(out, '(char*)&r.e[j]', value)}\n      }}\n"
        f"      {vt}* q = ({vt}*)(out + pgk_group_offset(L, 0, row, col));\n"
        f"      #pragma unroll\n      for (int c = 0; c < {cnt}; ++c) q[c] = r.v[c];\n"
        f"      return;\n"
        f"    }}\n"
        f"    }}\n"
        f"    i0 = base;\n"
        f"    i1 = n - base < {v}u ? n : base + {v}u;\n"
        f"    step = 1;\n"
        f"  }} else {{\n"
        f"    i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    i1 = L.n;\n"
        f"    step = (long long)gridDim.x * blockDim.x;\n"
        f"  }}\n"
    )


def elementwise(
    name: str,
    inputs: tuple[dt.DataType, ...],
    out: dt.DataType,
    expr: str,
    result: dt.DataType,
    from_f32: bool = False,
) -> KernelSpec:
    """out[i] = expr(a, b, c), the inputs loaded as `inputs` dtypes; expr gives `result`.
    `from_f32`: the vector path also reads float32 inputs into a float compute type (the
    copy kernels: astype from float32), not only inputs of the compute dtype."""
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
        f"  {PDL_WAIT}\n"
        f"{_vector_path(inputs, out, value, from_f32)}"
        f"  for (long long i = i0; i < i1; i += step) {{\n"
        f"    long long o[{n + 1}];\n"
        f"    pgk_offsets<{n + 1}>(L, i, o);\n"
        f"{loads}\n"
        f"    {store(out, 'out + o[0]', value)}\n"
        f"  }}\n}}\n"
    )
    fmt = "@" + "Q" * (n + 1) + LAYOUT_FORMAT + "i" * n
    fmt += "".join(ctype(d).scalar_fmt for d in inputs)
    return KernelSpec(name, PREAMBLE + helpers + body, fmt, inputs, body, _vec_width(inputs, out))


def batch_source(specs: list[KernelSpec]) -> str:
    """One translation unit holding several instances (for building many at once)."""
    loads = dict.fromkeys(d for spec in specs for d in spec.inputs)
    return PREAMBLE + "".join(load_any(d) for d in loads) + "".join(s.body for s in specs)


# -- the instances ---------------------------------------------------------------------
@functools.cache
def copy_kernel(out: dt.DataType) -> KernelSpec:
    """Copy/convert any dtype (or fill with a scalar, pointer null) into `out`'s dtype."""
    return elementwise(f"pgk_copy_{out.name}", (out,), out, "a", out, from_f32=True)


#: dtypes the contiguous cast kernel converts between (see `cast_kernel`)
CAST_DTYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
#: 16-byte vectors each thread of the cast kernel moves (all loads issued before stores)
CAST_UNROLL = 4
CAST_FORMAT = "@QQq"


@functools.cache
def cast_kernel(src: dt.DataType, out: dt.DataType) -> KernelSpec:
    """out[i] = src[i] converted, both contiguous and 16-byte aligned (`cast.py` checks).

    A vector is V elements, 16 bytes of the wider dtype, so one side moves 16 bytes and the
    other 16 * narrow / wide. Vector j of a block's CAST_UNROLL * blockDim vectors goes to
    thread j % blockDim: neighbouring lanes touch neighbouring vectors, so every warp load
    and store is one contiguous run (the generic vector path gives each thread V
    consecutive elements, which for a float32 source means two 16-byte loads 32 bytes
    apart per lane). The n % V tail elements go to block 0."""
    if src not in CAST_DTYPES or out not in CAST_DTYPES or src is out:
        raise ValueError(f"no cast kernel from {src.name} to {out.name}")
    v = 16 // max(src.itemsize, out.itemsize)
    s, o = ctype(src), ctype(out)
    ivt, icnt = _vec_type(v * src.itemsize)
    ovt, ocnt = _vec_type(v * out.itemsize)
    assert icnt == 1 and ocnt == 1
    name = f"pgk_cast_{src.name}_{out.name}"
    value = convert(load(src, "(const char*)&a[u].e[e]"), src, out)
    tail = convert(load(src, f"x + i * {src.itemsize}"), src, out)
    body = f"""union PgkIn_{name} {{ {ivt} v; {s.storage} e[{v}]; }};
union PgkOut_{name} {{ {ovt} v; {o.storage} e[{v}]; }};
extern "C" __global__ void __launch_bounds__(256) {name}(char* out, const char* x,
                                                           long long n) {{
  const long long nvec = n / {v};
  const long long first = (long long)blockIdx.x * blockDim.x * {CAST_UNROLL} + threadIdx.x;
  PgkIn_{name} a[{CAST_UNROLL}];
  #pragma unroll
  for (int u = 0; u < {CAST_UNROLL}; ++u) {{
    const long long j = first + (long long)u * blockDim.x;
    if (j < nvec) a[u].v = ((const {ivt}*)x)[j];
  }}
  #pragma unroll
  for (int u = 0; u < {CAST_UNROLL}; ++u) {{
    const long long j = first + (long long)u * blockDim.x;
    if (j < nvec) {{
      PgkOut_{name} r;
      #pragma unroll
      for (int e = 0; e < {v}; ++e) {store(out, "(char*)&r.e[e]", value)}
      (({ovt}*)out)[j] = r.v;
    }}
  }}
  if (blockIdx.x == 0) {{
    for (long long i = nvec * {v} + threadIdx.x; i < n; i += blockDim.x)
      {store(out, f"out + i * {out.itemsize}", tail)}
  }}
}}
"""
    return KernelSpec(name, PREAMBLE + body, CAST_FORMAT, (src,), body, v)


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
    for a in CAST_DTYPES:
        for b in CAST_DTYPES:
            if a is not b:
                yield cast_kernel(a, b)
    for op in UNARY:
        for compute, out in unary_cases(op):
            for approximate in ("none", "tanh") if op == "gelu" else ("none",):
                yield unary_kernel(op, compute, out, approximate)
    for op in BINARY:
        for compute, out in binary_cases(op):
            yield binary_kernel(op, compute, out)
