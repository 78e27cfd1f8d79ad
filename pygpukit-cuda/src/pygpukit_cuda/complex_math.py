"""Complex arithmetic on cuda that mixes the parts (multiply, divide, pow, square, exp, log,
sqrt, the trigonometric and hyperbolic functions and their inverses, the finiteness tests):
small NVRTC kernels over a complex struct of our own.

Every operand reaches the kernel as an array of the compute dtype: a Python scalar becomes a
0-d array filled on the device (no host transfer, so this works inside a graph capture), an
operand of another dtype a converted copy. The kernel walks the output's elements with the
provider's strided layout (`provider.layout`, ``PgkLayout``), so views and broadcasting
need no copies. Formulas follow NumPy's where it documents them: division is Smith's
scaled algorithm (no overflow for large divisors), a zero divisor gives inf/nan parts.
"""

from __future__ import annotations

import functools
from typing import Any

from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import launcher
from .device_facts import BLOCK, sm_count
from .kernels.complex_inverse import INVERSE_HELPERS
from .kernels.preamble import PREAMBLE
from .kernels.source import LAYOUT_FORMAT

UNARY_OPS = frozenset({
    "square", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sign", "sinh",
    "cosh", "tanh", "sin", "cos", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh",
    "isnan", "isinf", "isfinite",
})  # fmt: skip
BINARY_OPS = frozenset({"multiply", "divide", "pow"})
_TO_BOOL = frozenset({"isnan", "isinf", "isfinite"})

# C over `a` (and `b`) of struct type CX with parts of type R; `F` is the float-function
# suffix ("f" for float). Each gives the statement computing `r` (CX) or `t` (bool).
_BODIES = {
    "multiply": "CX r = pgk_cx_mul(a, b);",
    "square": "CX r = pgk_cx_mul(a, a);",
    "divide": "CX r = pgk_cx_div(a, b);",
    "exp": "CX r = pgk_cx_exp(a);",
    "log": "CX r = pgk_cx_log(a);",
    "log2": "CX r = pgk_cx_log(a); r.re *= (R)1.4426950408889634; r.im *= (R)1.4426950408889634;",
    "log10": (
        "CX r = pgk_cx_log(a); r.re *= (R)0.4342944819032518; r.im *= (R)0.4342944819032518;"
    ),
    "log1p": "CX r = pgk_cx_log1p(a);",
    "expm1": "CX r = pgk_cx_expm1(a);",
    "sinh": "CX r = pgk_cx_sinh(a);",
    "cosh": "CX r = pgk_cx_cosh(a);",
    "tanh": "CX r = pgk_cx_tanh(a);",
    "tan": "CX r = pgk_cx_tan(a);",
    "sin": "CX r = pgk_cx_sin(a);",
    "cos": "CX r = pgk_cx_cos(a);",
    "sqrt": "CX r = pgk_cx_sqrt(a);",
    "asinh": "CX r = pgk_cx_asinh(a);",
    "asin": "CX r = pgk_cx_asin(a);",
    "acosh": "CX r = pgk_cx_acosh(a);",
    "acos": "CX r = pgk_cx_acos(a);",
    "atanh": "CX r = pgk_cx_atanh(a);",
    "atan": "CX r = pgk_cx_atan(a);",
    "pow": "CX r = pgk_cx_pow(a, b);",
    "sign": "CX r = pgk_cx_sign(a);",
    "isnan": "bool t = a.re != a.re || a.im != a.im;",
    "isinf": "bool t = pgk_isinf(a.re) || pgk_isinf(a.im);",
    "isfinite": "bool t = (a.re - a.re) == (a.re - a.re) && (a.im - a.im) == (a.im - a.im);",
}

_HELPERS = r"""
struct CX { R re, im; };
__device__ __forceinline__ bool pgk_isinf(R x) { return x == x && (x - x) != (x - x); }
__device__ __forceinline__ bool pgk_finite(R x) { return (x - x) == (x - x); }
__device__ __forceinline__ CX pgk_cx_mul(CX a, CX b) {
  CX r; r.re = a.re * b.re - a.im * b.im; r.im = a.re * b.im + a.im * b.re; return r;
}
// Smith's algorithm: divide by the larger part of b first, so |b|^2 is never formed.
__device__ __forceinline__ CX pgk_cx_div(CX a, CX b) {
  CX r;
  R ar = fabsF(b.re), ai = fabsF(b.im);
  if (ar >= ai) {
    if (ar == (R)0 && ai == (R)0) { r.re = a.re / ar; r.im = a.im / ar; return r; }
    R q = b.im / b.re, s = (R)1 / (b.re + b.im * q);
    r.re = (a.re + a.im * q) * s; r.im = (a.im - a.re * q) * s;
  } else {
    R q = b.re / b.im, s = (R)1 / (b.im + b.re * q);
    r.re = (a.re * q + a.im) * s; r.im = (a.im * q - a.re) * s;
  }
  return r;
}
// z / |z| (0 for 0); an infinite part gives the unit along it, two give NaN (NumPy's sign).
__device__ __forceinline__ CX pgk_cx_sign(CX a) {
  CX r;
  R m = hypotF(a.re, a.im);
  bool ir = pgk_isinf(a.re), ii = pgk_isinf(a.im);
  if (ir && ii) { r.re = m - m; r.im = r.re; }
  else if (ir) { r.re = copysignF((R)1, a.re); r.im = (R)0; }
  else if (ii) { r.re = (R)0; r.im = copysignF((R)1, a.im); }
  else if (m == (R)0) { r.re = (R)0; r.im = (R)0; }
  else { r.re = a.re / m; r.im = a.im / m; }
  return r;
}
// exp with NumPy's special values: exact on the real axis; an infinite real part meeting
// an infinite or NaN imaginary one gives inf + NaN i (x = +inf) or a signed zero (-inf).
__device__ __forceinline__ CX pgk_cx_exp(CX a) {
  CX r; R x = a.re, y = a.im;
  if (y == (R)0) { r.re = expF(x); r.im = y; return r; }
  if (pgk_isinf(x) && !pgk_finite(y)) {
    if (x > (R)0) { r.re = x; r.im = y - y; }
    else { r.re = (R)0; r.im = copysignF((R)0, y); }
    return r;
  }
  if (x > (R)BIGX) {  // e^x overflows while e^x sin y may not: two factors of e^(x/2)
    R h = expF((R)0.5 * x);
    r.re = (h * cosF(y)) * h; r.im = (h * sinF(y)) * h;
    return r;
  }
  R e = expF(x); r.re = e * cosF(y); r.im = e * sinF(y);
  return r;
}
__device__ __forceinline__ CX pgk_cx_log(CX a) {
  CX r; r.re = logF(hypotF(a.re, a.im)); r.im = atan2F(a.im, a.re); return r;
}
// log(1 + z) without the cancellation near 0: |1 + z|^2 = 1 + (2x + x^2 + y^2).
__device__ __forceinline__ CX pgk_cx_log1p(CX a) {
  CX r;
  if (fabsF(a.re) < (R)0.5 && fabsF(a.im) < (R)0.5) {
    r.re = (R)0.5 * log1pF(a.re * ((R)2 + a.re) + a.im * a.im);
  } else {
    r.re = logF(hypotF((R)1 + a.re, a.im));
  }
  r.im = atan2F(a.im, (R)1 + a.re);
  return r;
}
// exp(z) - 1 without the cancellation near 0: cos(y) - 1 = -2 sin^2(y / 2).
__device__ __forceinline__ CX pgk_cx_expm1(CX a) {
  CX r;
  if (a.im == (R)0) { r.re = expm1F(a.re); r.im = a.im; return r; }
  if (!pgk_finite(a.re) || !pgk_finite(a.im)) {  // exp's special values, less one
    r = pgk_cx_exp(a); r.re -= (R)1; return r;
  }
  R h = sinF((R)0.5 * a.im);
  r.re = expm1F(a.re) * cosF(a.im) - (R)2 * h * h;
  r.im = expF(a.re) * sinF(a.im);
  return r;
}
// (cosh x, sinh x) scaled so that a product with a tiny cos y or sin y stays finite where
// the result is: for large |x| each is e * (e / 2) with e = exp(|x| / 2).
__device__ __forceinline__ void pgk_cx_hyp(R x, R c, R s, CX* r, bool sinh_first) {
  if (fabsF(x) > (R)BIGX) {
    R e = expF((R)0.5 * fabsF(x));
    R sh = copysignF(e, x);  // sinh carries the sign of x, cosh does not
    R first = sinh_first ? sh : e, second = sinh_first ? e : sh;
    r->re = (first * ((R)0.5 * c)) * e;
    r->im = (second * ((R)0.5 * s)) * e;
  } else {
    r->re = (sinh_first ? sinhF(x) : coshF(x)) * c;
    r->im = (sinh_first ? coshF(x) : sinhF(x)) * s;
  }
}
// Special values as NumPy gives them (C99 Annex G): exact on the axes, NaN parts where
// an infinite real part meets an infinite or NaN imaginary one.
__device__ __forceinline__ CX pgk_cx_sinh(CX a) {
  CX r; R x = a.re, y = a.im;
  if (y == (R)0) { r.re = sinhF(x); r.im = y; return r; }
  if (x == (R)0) { r.re = x; r.im = sinF(y); return r; }
  if (pgk_isinf(x) && !pgk_finite(y)) { r.re = x; r.im = y - y; return r; }
  pgk_cx_hyp(x, cosF(y), sinF(y), &r, true);
  return r;
}
__device__ __forceinline__ CX pgk_cx_cosh(CX a) {
  CX r; R x = a.re, y = a.im;
  if (y == (R)0) { r.re = coshF(x); r.im = copysignF((R)0, x) * y; return r; }
  if (x == (R)0) { r.re = cosF(y); r.im = pgk_finite(y) ? x * sinF(y) : (R)0; return r; }
  if (pgk_isinf(x) && !pgk_finite(y)) { r.re = fabsF(x); r.im = y - y; return r; }
  pgk_cx_hyp(x, cosF(y), sinF(y), &r, false);
  return r;
}
// sin z = -i sinh(iz), cos z = cosh(iz)
__device__ __forceinline__ CX pgk_cx_sin(CX a) {
  CX t; t.re = -a.im; t.im = a.re;
  CX h = pgk_cx_sinh(t), r; r.re = h.im; r.im = -h.re;
  return r;
}
__device__ __forceinline__ CX pgk_cx_cos(CX a) {
  CX t; t.re = -a.im; t.im = a.re;
  return pgk_cx_cosh(t);
}
// tanh by Kahan's formula in tan(y) and sinh(x); past |x| = SATX tanh x is +-1 to the last
// bit. An infinite real part gives +-1 + 0i with the sign of y, as the standard asks.
__device__ __forceinline__ CX pgk_cx_tanh(CX a) {
  CX r; R x = a.re, y = a.im;
  if (!pgk_finite(x)) {
    if (x != x) { r.re = x; r.im = (y == (R)0) ? y : x * y; return r; }
    r.re = copysignF((R)1, x); r.im = copysignF((R)0, y); return r;
  }
  if (!pgk_finite(y)) { r.re = (x == (R)0) ? x : y - y; r.im = y - y; return r; }
  if (fabsF(x) > (R)SATX) {
    R e = expF(-fabsF(x));
    r.re = copysignF((R)1, x); r.im = (R)4 * sinF(y) * cosF(y) * e * e; return r;
  }
  R t = tanF(y), b = (R)1 + t * t, s = sinhF(x), rho = sqrtF((R)1 + s * s);
  R d = (R)1 + b * s * s;
  r.re = b * rho * s / d; r.im = t / d;
  return r;
}
// tan z = -i tanh(iz)
__device__ __forceinline__ CX pgk_cx_tan(CX a) {
  CX t; t.re = -a.im; t.im = a.re;
  CX h = pgk_cx_tanh(t), r; r.re = h.im; r.im = -h.re;
  return r;
}
// The principal square root: real part >= 0, imaginary part with the sign of a.im.
__device__ __forceinline__ CX pgk_cx_sqrt(CX a) {
  CX r;
  if (a.re == (R)0 && a.im == (R)0) { r.re = (R)0; r.im = a.im; return r; }
  if (pgk_isinf(a.im)) { r.re = fabsF(a.im); r.im = a.im; return r; }
  R t = sqrtF(((R)0.5) * (fabsF(a.re) + hypotF(a.re, a.im)));
  if (a.re >= (R)0) { r.re = t; r.im = a.im / ((R)2 * t); }
  else { r.re = fabsF(a.im) / ((R)2 * t); r.im = copysignF(t, a.im); }
  return r;
}
"""


@functools.cache
def _kernel(op: str, dtype: dt.DataType) -> tuple[str, str, str]:
    """(name, source, struct format) of op's kernel for complex `dtype`."""
    binary = op in BINARY_OPS
    name = f"pgk_cx_{op}_{dtype.name}"
    loads = "CX a = *(const CX*)(pa + o[1]);"
    if binary:
        loads += " CX b = *(const CX*)(pb + o[2]);"
    store = (
        "*(unsigned char*)(out + o[0]) = t ? 1 : 0;"
        if op in _TO_BOOL
        else "*(CX*)(out + o[0]) = r;"
    )
    nops = 3 if binary else 2
    params = "char* out, const char* pa" + (", const char* pb" if binary else "")
    body = (
        f'extern "C" __global__ void {name}({params}, PgkLayout L) {{\n'
        f"  PGK_GRID_LOOP(i, L.n) {{\n"
        f"    long long o[{nops}];\n"
        f"    pgk_offsets<{nops}>(L, i, o);\n"
        f"    {loads}\n"
        f"    {_BODIES[op]}\n"
        f"    {store}\n"
        f"  }}\n}}\n"
    )
    fmt = "@" + "Q" * nops + LAYOUT_FORMAT
    return name, PREAMBLE + _specialise(_HELPERS + INVERSE_HELPERS + body, dtype), fmt


def _specialise(text: str, dtype: dt.DataType) -> str:
    """The helpers' dialect spelled out for complex `dtype`: the part type, the
    float-function flavour and the thresholds (no templates: NVRTC then needs no overloads
    of the C math functions)."""
    double = dtype is dt.complex128
    r, f = ("double", "") if double else ("float", "f")
    for fn in ("expm1", "exp", "cosh", "asinh", "sinh", "tan", "cos", "sin", "log1p", "log",
               "hypot", "atan2", "fabs", "sqrt", "copysign", "trunc"):  # fmt: skip
        text = text.replace(f"{fn}F(", f"{fn}{f}(")
    text = text.replace("CX", f"pgk_cx_{r}").replace("(R)", f"({r})").replace("R ", f"{r} ")
    text = text.replace("BIGX", "700" if double else "80")
    text = text.replace("SATX", "22" if double else "9")
    # |z| past which log(2z) is asinh/acosh to the last bit: 2^27 (double), 2^12 (float)
    text = text.replace("ASYMX", "134217728.0" if double else "4096.0")
    return text.replace("PI_2", "1.5707963267948966")


def _operand(x: Any, compute: dt.DataType, like: GPUArray) -> GPUArray:
    """x as an array of `compute` with `like`'s shape (broadcast views stay views)."""
    from . import complex_planes

    if not isinstance(x, GPUArray):
        one = GPUArray.empty((), compute, like.device)
        complex_planes.fill(one, complex(x))
        return one._view(like.shape, (0,) * like.ndim, one._offset)
    if x.dtype is compute:
        return x
    converted = GPUArray.empty(x.shape, compute, x.device)
    complex_planes.copy(x, converted)
    return converted


def _launch(op: str, compute: dt.DataType, out: GPUArray, inputs: list[GPUArray]) -> None:
    from .provider import layout

    arrays = [out, *inputs]
    n, values = layout(out.shape, [a.strides for a in arrays])
    if n == 0:
        return
    name, src, fmt = _kernel(op, compute)
    index = out.device.index
    fn = launcher.function(index, name, src, fmt)
    grid = max(1, min(-(-n // BLOCK), sm_count(index) * 32))
    ptrs = [a._buffer.ptr + a._offset for a in arrays]
    fn.launch((grid,), (BLOCK,), (*ptrs, *values))


def unary(op: str, x: GPUArray, out: GPUArray) -> None:
    """An UNARY_OPS op of complex x (the finiteness tests into a bool out)."""
    if op not in UNARY_OPS:
        raise TypeError(f"the cuda backend has no {op} kernel for {x.dtype.name}")
    _launch(op, x.dtype, out, [x])


def binary(op: str, x1: Any, x2: Any, out: GPUArray, compute: dt.DataType) -> None:
    """A BINARY_OPS op evaluated in complex `compute`."""
    if op not in BINARY_OPS:
        raise TypeError(f"the cuda backend has no {op} kernel for {compute.name}")
    _launch(op, compute, out, [_operand(x1, compute, out), _operand(x2, compute, out)])


def sources() -> list[tuple[str, str, str]]:
    """Every kernel of this module (for the compile test)."""
    out = [_kernel(op, d) for op in sorted(UNARY_OPS | BINARY_OPS) for d in dt.COMPLEX_DTYPES]
    out += [(*_prod_kernel(d), "@QQq") for d in dt.COMPLEX_DTYPES]
    from . import complex_scan
    from .kernels.reduction_source import SCAN_FORMAT

    for d in dt.COMPLEX_DTYPES:
        out.append((*complex_scan.scan_kernel("cumulative_prod", d, d), SCAN_FORMAT))
    return out


# -- the product reduction -----------------------------------------------------------------
_PROD_BODY = r"""
// One block per row of a contiguous (rows, m) complex array: each thread multiplies every
// blockDim-th element, then the block multiplies its threads' products pairwise.
extern "C" __global__ void NAME(char* out, const char* x, long long m) {
  __shared__ CX part[256];
  const CX* row = (const CX*)x + (long long)blockIdx.x * m;
  CX acc; acc.re = (R)1; acc.im = (R)0;
  for (long long j = threadIdx.x; j < m; j += blockDim.x) acc = pgk_cx_mul(acc, row[j]);
  part[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] = pgk_cx_mul(part[threadIdx.x], part[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) ((CX*)out)[blockIdx.x] = part[0];
}
"""
_PROD_BLOCK = 256  # the shared array's size above


@functools.cache
def _prod_kernel(dtype: dt.DataType) -> tuple[str, str]:
    name = f"pgk_cx_prod_{dtype.name}"
    return name, _specialise(_HELPERS + _PROD_BODY.replace("NAME", name), dtype)


def prod(x: GPUArray, out: GPUArray, axes: tuple[int, ...]) -> None:
    """out (keepdims shape) = the product of complex x over `axes`, in out's dtype."""
    from . import complex_planes

    if x.dtype is not out.dtype:  # the standard: the product is taken in the result dtype
        converted = GPUArray.empty(x.shape, out.dtype, x.device)
        complex_planes.copy(x, converted)
        x = converted
    kept = [a for a in range(x.ndim) if a not in axes]
    rows = 1
    for a in kept:
        rows *= x.shape[a]
    m = x.size // rows if rows else 0
    if rows == 0:
        return
    if m == 0:  # an empty product is one
        complex_planes.fill(out, 1.0)
        return
    perm = kept + list(axes)
    moved = x._view(tuple(x.shape[a] for a in perm), tuple(x.strides[a] for a in perm),
                    x._offset)  # fmt: skip
    block = GPUArray.empty(moved.shape, x.dtype, x.device)
    complex_planes.raw_copy(moved, block)  # rows of m elements, back to back
    result = GPUArray.empty(out.shape, out.dtype, out.device)
    name, src = _prod_kernel(out.dtype)
    index = out.device.index
    fn = launcher.function(index, name, src, "@QQq")
    fn.launch((rows,), (_PROD_BLOCK,), (result._buffer.ptr + result._offset,
                                        block._buffer.ptr + block._offset, m))  # fmt: skip
    complex_planes.raw_copy(result, out)
