"""CUDA C of the reductions (sum ... argmin) and the cumulative scans, one instance per
(op, input dtype, output dtype).

A reduction sees its input as kept dimensions (one per output element) and reduced
dimensions, each group merged where contiguous (`PgkRLayout`). Three kernels share one
accumulator ("state") per op: `_row` gives each (output, split) work item a warp or a whole
block whose threads stride along the reduced elements (16-byte loads when they are
contiguous and aligned), `_col` gives each output one thread that walks its reduced
elements (coalesced when neighbouring outputs are neighbours in memory), and `_fin` merges
the per-split partial states of a split reduction, a warp per output (a grid-wide full
reduction is `_row` with many splits, then `_fin`: no atomics, deterministic).

Accumulation: float32 for float16/bfloat16/float32, float64 for float64, int64 (wrapping)
for integers; var/std keep shifted sums in float64 (the shift is each output's first
element, so the partial sums of splits simply add).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pygpukit.core import dtypes as dt

from .ctypes_table import convert, ctype
from .preamble import PREAMBLE

#: struct format of PgkRLayout (nout, nred, kdim, rdim, then five arrays of 8)
RLAYOUT_FORMAT = "4q40q"
#: bytes reserved per partial state in a split reduction's workspace
STATE_BYTES = 16

COMMON = r"""
struct PgkRLayout {
  long long nout, nred, kdim, rdim;
  long long kshape[8], kin[8], kout[8], rshape[8], rin[8];
};
__device__ __forceinline__ void pgk_kept(const PgkRLayout& L, long long o, long long& xin,
                                         long long& xout) {
  xin = 0; xout = 0;
  #pragma unroll 1
  for (int d = (int)L.kdim - 1; d >= 0; --d) {
    long long c = o % L.kshape[d];
    o /= L.kshape[d];
    xin += c * L.kin[d]; xout += c * L.kout[d];
  }
}
__device__ __forceinline__ long long pgk_red_off(const PgkRLayout& L, long long r) {
  if (L.rdim <= 1) return r * L.rin[0];
  long long off = 0;
  #pragma unroll 1
  for (int d = (int)L.rdim - 1; d >= 0; --d) {
    long long c = r % L.rshape[d];
    r /= L.rshape[d];
    off += c * L.rin[d];
  }
  return off;
}
template <typename S> __device__ __forceinline__ S pgk_shfl_down(S s, int d) {
  static_assert(sizeof(S) % 4 == 0, "state must be whole words");
  union U { S s; int w[sizeof(S) / 4]; } u;
  u.s = s;
  #pragma unroll
  for (int i = 0; i < (int)(sizeof(S) / 4); ++i) u.w[i] = __shfl_down_sync(0xffffffffu, u.w[i], d);
  return u.s;
}
// Merge a state across a group of `group` threads (32: one warp; more: the whole block);
// the group's lane 0 gets the result. Every thread of the group must call it.
template <typename S> __device__ __forceinline__ S pgk_group_reduce(S s, long long group) {
  #pragma unroll
  for (int d = 16; d > 0; d >>= 1) pgk_merge(s, pgk_shfl_down(s, d));
  if (group <= 32) return s;
  __shared__ S sh[32];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) sh[warp] = s;
  __syncthreads();
  if (warp == 0) {
    S t; pgk_init(t);
    if (lane < (int)(blockDim.x >> 5)) t = sh[lane];
    #pragma unroll
    for (int d = 16; d > 0; d >>= 1) pgk_merge(t, pgk_shfl_down(t, d));
    s = t;
  }
  __syncthreads();
  return s;
}
"""

# The three kernels, written once over PGK_STATE / PGK_ACC / PGK_LOADV / PGK_FROM and the
# op's pgk_init / pgk_add / pgk_merge / pgk_store.
KERNELS = r"""
struct alignas(16) PgkVec { PGK_TS v[16 / sizeof(PGK_TS)]; };
#define PGK_V ((long long)(16 / sizeof(PGK_TS)))
#define PGK_ADD_VEC(w, first)                                                     \
  _Pragma("unroll") for (int e = 0; e < PGK_V; ++e)                               \
    pgk_add(st, PGK_VALUE(PGK_FROM(w.v[e])), (first) + e, shift);

extern "C" __global__ void __launch_bounds__(256) PGK_NAME_row(
    char* out, PGK_STATE* ws, const char* x, PgkRLayout L, long long splits, long long chunk,
    long long group, double param, long long bx, long long by) {
  // bx: the first block of a slice of the grid (0 unsliced); by is the _col kernel's
  const long long item = ((long long)blockIdx.x + bx) * (blockDim.x / group) + threadIdx.x / group;
  const long long lane = threadIdx.x % group;
  const bool active = item < L.nout * splits;
  PGK_STATE st; pgk_init(st);
  long long xin = 0, xout = 0;
  if (active) {
    const long long o = item / splits, s = item - o * splits;
    pgk_kept(L, o, xin, xout);
    const char* base = x + xin;
    const PGK_ACC shift = L.nred > 0 ? PGK_VALUE(PGK_LOAD(base)) : (PGK_ACC)0;
    const long long r0 = s * chunk, r1 = min(L.nred, r0 + chunk);
    const char* start = base + r0 * (long long)sizeof(PGK_TS);
    if (L.rdim == 1 && L.rin[0] == (long long)sizeof(PGK_TS) &&
        ((unsigned long long)start & 15ull) == 0) {
      const PgkVec* pv = (const PgkVec*)start;
      const long long nv = (r1 - r0) / PGK_V;
      long long j = lane;
      for (; j + 3 * group < nv; j += 4 * group) {
        PgkVec w0 = pv[j], w1 = pv[j + group], w2 = pv[j + 2 * group], w3 = pv[j + 3 * group];
        PGK_ADD_VEC(w0, r0 + j * PGK_V)
        PGK_ADD_VEC(w1, r0 + (j + group) * PGK_V)
        PGK_ADD_VEC(w2, r0 + (j + 2 * group) * PGK_V)
        PGK_ADD_VEC(w3, r0 + (j + 3 * group) * PGK_V)
      }
      for (; j < nv; j += group) { PgkVec w = pv[j]; PGK_ADD_VEC(w, r0 + j * PGK_V) }
      for (long long r = r0 + nv * PGK_V + lane; r < r1; r += group)
        pgk_add(st, PGK_VALUE(PGK_LOAD(base + r * (long long)sizeof(PGK_TS))), r, shift);
    } else {
      for (long long r = r0 + lane; r < r1; r += group)
        pgk_add(st, PGK_VALUE(PGK_LOAD(base + pgk_red_off(L, r))), r, shift);
    }
  }
  st = pgk_group_reduce(st, group);
  if (active && lane == 0) {
    if (splits == 1) pgk_store(out + xout, st, L.nred, param);
    else ws[item] = st;
  }
}

extern "C" __global__ void __launch_bounds__(256) PGK_NAME_col(
    char* out, PGK_STATE* ws, const char* x, PgkRLayout L, long long splits, long long chunk,
    long long group, double param, long long bx, long long by) {
  // (bx, by): the first block of a slice of the grid, (0, 0) unsliced
  const long long o = ((long long)blockIdx.x + bx) * blockDim.x + threadIdx.x;
  const long long s = (long long)blockIdx.y + by;
  if (o >= L.nout) return;
  long long xin, xout;
  pgk_kept(L, o, xin, xout);
  const char* base = x + xin;
  const PGK_ACC shift = L.nred > 0 ? PGK_VALUE(PGK_LOAD(base)) : (PGK_ACC)0;
  const long long r0 = s * chunk, r1 = min(L.nred, r0 + chunk);
  PGK_STATE st; pgk_init(st);
  #pragma unroll 4
  for (long long r = r0; r < r1; ++r)
    pgk_add(st, PGK_VALUE(PGK_LOAD(base + pgk_red_off(L, r))), r, shift);
  if (splits == 1) pgk_store(out + xout, st, L.nred, param);
  else ws[o * splits + s] = st;
}

extern "C" __global__ void __launch_bounds__(256) PGK_NAME_fin(
    char* out, const PGK_STATE* ws, PgkRLayout L, long long splits, double param) {
  const long long o = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (o >= L.nout) return;
  PGK_STATE st; pgk_init(st);
  for (long long j = lane; j < splits; j += 32) pgk_merge(st, ws[o * splits + j]);
  st = pgk_group_reduce(st, 32);
  if (lane == 0) {
    long long xin, xout;
    pgk_kept(L, o, xin, xout);
    pgk_store(out + xout, st, L.nred, param);
  }
}
"""

# Each op: (state struct, init, add, merge, store); `A` is the accumulator type, `STORE(v)`
# the output store of an accumulator value.
_OPS = {
    "sum": (
        "struct PgkS { A v; };",
        "s.v = (A)0;",
        "s.v = pgk_plus(s.v, v);",
        "a.v = pgk_plus(a.v, b.v);",
        "STORE(s.v);",
    ),
    "prod": (
        "struct PgkS { A v; };",
        "s.v = (A)1;",
        "s.v = pgk_times(s.v, v);",
        "a.v = pgk_times(a.v, b.v);",
        "STORE(s.v);",
    ),
    "mean": (
        "struct PgkS { A v; };",
        "s.v = (A)0;",
        "s.v += v;",
        "a.v += b.v;",
        "STORE(s.v / (A)n);",
    ),
    "var": (
        "struct PgkS { double s, ss; };",
        "s.s = 0; s.ss = 0;",
        "double d = (double)v - (double)shift; s.s += d; s.ss += d * d;",
        "a.s += b.s; a.ss += b.ss;",
        "double r = __longlong_as_double(0x7ff8000000000000ll);\n"
        "  if ((double)n - param > 0) { double m2 = s.ss - s.s * (s.s / (double)n);\n"
        "    r = (m2 < 0 ? 0.0 : m2) / ((double)n - param); }\n"
        "  STORE(PGK_FINISH(r));",
    ),
    "max": (
        "struct PgkS { A v; };",
        "s.v = PGK_LOWEST;",
        "if (v != v || v > s.v) s.v = v;",
        "if (b.v != b.v || b.v > a.v) a.v = b.v;",
        "STORE(s.v);",
    ),
    "min": (
        "struct PgkS { A v; };",
        "s.v = PGK_HIGHEST;",
        "if (v != v || v < s.v) s.v = v;",
        "if (b.v != b.v || b.v < a.v) a.v = b.v;",
        "STORE(s.v);",
    ),
    "all": (
        "struct PgkS { int v; };",
        "s.v = 1;",
        "s.v &= (int)v;",
        "a.v &= b.v;",
        "STORE(s.v);",
    ),
    "any": (
        "struct PgkS { int v; };",
        "s.v = 0;",
        "s.v |= (int)v;",
        "a.v |= b.v;",
        "STORE(s.v);",
    ),
    "count_nonzero": (
        "struct PgkS { long long v; };",
        "s.v = 0;",
        "s.v += (long long)v;",
        "a.v += b.v;",
        "STORE(s.v);",
    ),
}
# argmax/argmin: the first occurrence wins; NaN counts as the extreme (the first NaN wins).
_ARG = (
    "struct PgkS { A v; long long i; };",
    "s.v = PGK_ARG_START; s.i = 0x7fffffffffffffffll;",
    "pgk_arg_add(s, v, r);",
    "pgk_arg_take(a, b.v, b.i);",
    "STORE(s.i);",
)
_ARG_TAKE = r"""
__device__ __forceinline__ void pgk_arg_take(PgkS& a, A v, long long i) {
  if (i == 0x7fffffffffffffffll) return;  // merging an empty state
  bool an = a.v != a.v, vn = v != v;
  bool take = a.i == 0x7fffffffffffffffll ||
      (vn ? (!an || i < a.i) : (!an && (v CMP a.v || (v == a.v && i < a.i))));
  if (take) { a.v = v; a.i = i; }
}
// One thread's own elements arrive in increasing index order (every loop of the kernels
// below walks upwards), so only a strictly better value, the first NaN, or a first
// element equal to the start value (an all-lowest run) takes over: cheaper per element
// than the general merge above.
__device__ __forceinline__ void pgk_arg_add(PgkS& a, A v, long long i) {
  const bool take = (v CMP a.v) || (v != v && a.v == a.v) ||
                    (v == a.v && a.i == 0x7fffffffffffffffll);
  if (take) { a.v = v; a.i = i; }
}
"""


def _acc(op: str, x: dt.DataType, out: dt.DataType) -> dt.DataType:
    """The accumulator dtype of `op` on input `x` into output `out`."""
    if op in ("sum", "prod"):
        c = ctype(out)
        return dt.float64 if c.math == "double" else dt.float32 if c.is_float_math else dt.int64
    if op == "mean":
        return dt.float64 if out is dt.float64 or not x.is_floating else dt.float32
    if op in ("var", "std"):
        return dt.float64
    if op in ("all", "any", "count_nonzero"):
        return dt.int32
    # max/min/argmax/argmin compare in the input's own math type (bool as int)
    if x.kind == "b":
        return dt.int32
    c = ctype(x)
    return dt.float64 if c.math == "double" else dt.float32 if c.is_float_math else dt.int64


def _from_storage(x: dt.DataType) -> str:
    """C macro body: a storage value `s` of x's dtype as x's math type."""
    if x is dt.float16:
        return "pgk_h2f(s)"
    if x is dt.bfloat16:
        return "pgk_b2f(s)"
    if x.is_float8:
        return f"pgk_ld_{x.name}((const char*)&(s))"
    if x.kind == "b":
        return "(s != 0)"
    return "(s)"


def _value(op: str, x: dt.DataType, out: dt.DataType, acc: dt.DataType) -> str:
    """C macro body: x's math value `v` as the accumulator value the op adds."""
    a = ctype(acc).math
    if op in ("all", "any", "count_nonzero"):
        return "((v) != 0)"
    if op in ("sum", "prod") and x is not out:
        # the input is cast to the result dtype first (rounded to half types, wrapped ints)
        conv = convert("(v)", x, out)
        if out is dt.float16:
            conv = f"pgk_h2f(pgk_f2h({conv}))"
        elif out is dt.bfloat16:
            conv = f"pgk_b2f(pgk_f2b({conv}))"
        return f"(({a})({conv}))"
    return f"(({a})(v))"


def _limits(acc: dt.DataType) -> tuple[str, str]:
    if acc is dt.float32 or acc is dt.float64:
        return (
            "((A)__longlong_as_double(0xfff0000000000000ll))",
            "((A)__longlong_as_double(0x7ff0000000000000ll))",
        )
    if acc is dt.int32:
        return "0", "1"  # bool
    return "(-0x7fffffffffffffffll - 1)", "0x7fffffffffffffffll"


@dataclass(frozen=True)
class ReductionSpec:
    """A reduction instance: one source holding its `_row`, `_col` and `_fin` kernels."""

    name: str
    source: str
    op: str
    x: dt.DataType
    out: dt.DataType

    @property
    def row(self) -> str:
        return f"{self.name}_row"

    @property
    def col(self) -> str:
        return f"{self.name}_col"

    @property
    def fin(self) -> str:
        return f"{self.name}_fin"


#: argument formats: (out, ws, x, layout, splits, chunk, group, param, bx, by) and the
#: finaliser's; (bx, by) offsets the block index of a slice of the grid (see reductions.py)
ROW_FORMAT = "@QQQ" + RLAYOUT_FORMAT + "qqqdqq"
FIN_FORMAT = "@QQ" + RLAYOUT_FORMAT + "qd"


def reduction_body(op: str, x: dt.DataType, out: dt.DataType, name: str) -> str:
    acc = _acc(op, x, out)
    a = ctype(acc).math
    base_op = "var" if op == "std" else op
    parts = _ARG if op in ("argmax", "argmin") else _OPS[base_op]
    struct, init, add, merge, store = parts
    lowest, highest = _limits(acc)
    store_src = {"var": dt.float64}.get(base_op, acc)
    if op in ("argmax", "argmin"):
        store_src = dt.int64
    store_expr = convert("(w)", store_src, out)
    finish = "sqrt(r)" if op == "std" else "r"
    wrap = acc is dt.int64
    plus = "(A)((unsigned long long)a + (unsigned long long)b)" if wrap else "a + b"
    times = "(A)((unsigned long long)a * (unsigned long long)b)" if wrap else "a * b"
    xs = ctype(x)
    lines = [
        f"#define PGK_TS {xs.storage}",
        f"#define PGK_FROM(s) {_from_storage(x)}",
        f"#define PGK_LOAD(p) pgk_ld_{x.name}(p)",
        f"#define PGK_VALUE(v) {_value(op, x, out, acc)}",
        f"#define PGK_ACC {a}",
        "#define PGK_STATE PgkS",
        f"#define PGK_LOWEST {lowest}",
        f"#define PGK_HIGHEST {highest}",
        f"#define PGK_FINISH(r) {finish}",
        f"#define PGK_ARG_START {lowest if op == 'argmax' else highest}",
        f"#define STORE(w) pgk_st_{out.name}(p, {store_expr})",
        f"typedef {a} A;",
        f"__device__ __forceinline__ A pgk_plus(A a, A b) {{ return {plus}; }}",
        f"__device__ __forceinline__ A pgk_times(A a, A b) {{ return {times}; }}",
        struct,
        _ARG_TAKE.replace("CMP", ">" if op == "argmax" else "<") if op.startswith("arg") else "",
        f"__device__ __forceinline__ void pgk_init(PgkS& s) {{ {init} }}",
        "__device__ __forceinline__ void pgk_merge(PgkS& a, const PgkS& b) { " + merge + " }",
    ]
    lines += [
        f"__device__ __forceinline__ void pgk_add(PgkS& s, A v, long long r, A shift) {{ {add} }}",
        "__device__ __forceinline__ void pgk_store(char* p, const PgkS& s, long long n, "
        f"double param) {{\n  {store}\n}}",
    ]
    return "\n".join(lines) + COMMON + KERNELS.replace("PGK_NAME", name)


@functools.cache
def reduction_kernel(op: str, x: dt.DataType, out: dt.DataType) -> ReductionSpec:
    name = f"pgk_red_{op}_{x.name}_{out.name}"
    return ReductionSpec(name, PREAMBLE + reduction_body(op, x, out, name), op, x, out)


# -- cumulative sums and products: one warp per row, a shuffle scan per 32 elements ------
SCAN_FORMAT = "@QQ" + RLAYOUT_FORMAT + "qqqq"

_SCAN = r"""
extern "C" __global__ void __launch_bounds__(256) PGK_NAME(
    char* out, const char* x, PgkRLayout L, long long n, long long xs, long long os,
    long long include) {
  const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (row >= L.nout) return;
  long long xin, xout;
  pgk_kept(L, row, xin, xout);
  char* p;
  if (include) {
    if (lane == 0) { p = out + xout; STORE(PGK_IDENTITY); }
    xout += os;
  }
  A carry = PGK_IDENTITY;
  for (long long b = 0; b < n; b += 32) {
    const long long r = b + lane;
    A v = r < n ? PGK_VALUE(PGK_LOAD(x + xin + r * xs)) : PGK_IDENTITY;
    #pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      A u = __shfl_up_sync(0xffffffffu, v, d);
      if (lane >= d) v = PGK_OP(u, v);
    }
    v = PGK_OP(carry, v);
    if (r < n) { p = out + xout + r * os; STORE(v); }
    carry = __shfl_sync(0xffffffffu, v, 31);
  }
}
"""


@functools.cache
def scan_kernel(op: str, x: dt.DataType, out: dt.DataType) -> tuple[str, str]:
    """(name, source) of cumulative_sum/cumulative_prod from x's dtype into out's."""
    name = f"pgk_{op}_{x.name}_{out.name}"
    kind = "sum" if op == "cumulative_sum" else "prod"
    acc = _acc(kind, x, out)
    a = ctype(acc).math
    wrap = acc is dt.int64
    if kind == "sum":
        fn = "(A)((unsigned long long)a + (unsigned long long)b)" if wrap else "a + b"
    else:
        fn = "(A)((unsigned long long)a * (unsigned long long)b)" if wrap else "a * b"
    lines = [
        f"#define PGK_LOAD(p) pgk_ld_{x.name}(p)",
        f"#define PGK_VALUE(v) {_value(kind, x, out, acc)}",
        f"#define PGK_IDENTITY ((A){0 if kind == 'sum' else 1})",
        "#define PGK_OP(a, b) pgk_op(a, b)",
        f"#define STORE(w) pgk_st_{out.name}(p, {convert('(w)', acc, out)})",
        f"typedef {a} A;",
        f"__device__ __forceinline__ A pgk_op(A a, A b) {{ return {fn}; }}",
        # pgk_group_reduce (unused here) needs these names
        "struct PgkS { A v; };",
        "__device__ __forceinline__ void pgk_init(PgkS& s) { s.v = PGK_IDENTITY; }",
        "__device__ __forceinline__ void pgk_merge(PgkS& a, const PgkS& b) "
        "{ a.v = pgk_op(a.v, b.v); }",
    ]
    src = PREAMBLE + "\n".join(lines) + COMMON + _SCAN.replace("PGK_NAME", name)
    return name, src


#: the ops this module builds, with the dtypes their kernels accept
REDUCTION_OPS = ("sum", "prod", "mean", "var", "std", "max", "min", "all", "any",
                 "count_nonzero", "argmax", "argmin")  # fmt: skip
ACCEPTED = tuple(d for d in dt.ALL_DTYPES if not d.is_float8)


def default_out(op: str, x: dt.DataType) -> dt.DataType:
    """The result dtype the core picks for `op` on `x` without a dtype= argument."""
    if op in ("sum", "prod", "cumulative_sum", "cumulative_prod"):
        return dt.int64 if x.kind in "biu" else x
    if op in ("mean", "var", "std"):
        return x if x.is_floating else dt.float32
    if op in ("all", "any"):
        return dt.bool_
    if op in ("count_nonzero", "argmax", "argmin"):
        return dt.int64
    return x


def representative_sources() -> list[tuple[str, str]]:
    """(name, source) of one instance per op and dtype class (the compile test builds
    these; each op's other dtypes only change the macros above the shared templates)."""
    picks = (dt.float16, dt.float32, dt.float64, dt.int32, dt.bool_, dt.uint8)
    out = []
    for i, op in enumerate(REDUCTION_OPS):  # two dtype classes per op, rotating
        for x in (picks[i % 3], picks[3 + i % 3]):
            spec = reduction_kernel(op, x, default_out(op, x))
            out.append((spec.name, spec.source))
    out.append(scan_kernel("cumulative_sum", dt.bfloat16, dt.bfloat16))
    out.append(scan_kernel("cumulative_prod", dt.int8, dt.int64))
    return out
