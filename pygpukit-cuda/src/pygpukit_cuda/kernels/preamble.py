"""The CUDA C preamble every built-in kernel starts with: bit-level half/bfloat16/float8
conversions (no CUDA headers needed), typed loads and stores, the strided layout, and the
math helpers whose NumPy semantics need more than one expression."""

from __future__ import annotations

#: Most dimensions a kernel sees after merging contiguous ones, and most array operands.
MAX_DIMS = 8
MAX_OPERANDS = 4

#: The statement a kernel begins with to be launched programmatically (programmatic
#: dependent launch): the loader marks every kernel whose source holds it (launcher.py), and
#: the launch then lets it start while the kernel ahead of it on the stream finishes.
PDL_WAIT = "pgk_pdl_wait();"
#: pgk_pdl_wait(): blocks until the kernels this one depends on have finished and their
#: writes are visible (griddepcontrol.wait); a no-op in a plain launch and before sm_90.
PDL_HELPER = r"""
__device__ __forceinline__ void pgk_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
"""

_TEMPLATE = r"""
// ---- conversions -------------------------------------------------------------------
__device__ __forceinline__ float pgk_h2f(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short pgk_f2h(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
__device__ __forceinline__ float pgk_b2f(unsigned short b) {
  return __uint_as_float(((unsigned)b) << 16);
}
__device__ __forceinline__ unsigned short pgk_f2b(float f) {
  unsigned short b; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f)); return b;
}
// double -> float rounding to odd: a later float -> half rounding then rounds only once.
__device__ __forceinline__ float pgk_d2f_odd(double d) {
  float f; asm("cvt.rz.f32.f64 %0, %1;" : "=f"(f) : "d"(d));
  if ((double)f != d && d == d) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}
// 8-bit floats (out of line: inlined into every dtype switch they would slow compiles):
// e4m3fn (bias 7, no infinity, 0x7f is NaN) and e5m2 (bias 15, IEEE-like).
__device__ __noinline__ float pgk_f8_to_f(unsigned v, int mbits, int bias, bool fn) {
  unsigned mag = v & 0x7fu, e = mag >> mbits, m = v & ((1u << mbits) - 1u);
  float r;
  if (fn ? mag == 0x7fu : e == (0x7fu >> mbits)) {
    r = (fn || m) ? __uint_as_float(0x7fc00000u) : __uint_as_float(0x7f800000u);
  } else if (e == 0) {
    r = ldexpf((float)m, 1 - bias - mbits);
  } else {
    r = ldexpf((float)(m | (1u << mbits)), (int)e - bias - mbits);
  }
  return (v & 0x80u) ? -r : r;
}
__device__ __noinline__ unsigned char pgk_f_to_f8(float x, int mbits, int bias, bool fn) {
  unsigned sign = (__float_as_uint(x) >> 24) & 0x80u;
  float a = fabsf(x);
  if (a != a) return (unsigned char)(sign | (fn ? 0x7fu : 0x7eu));
  unsigned overflow = fn ? 0x7fu : 0x7cu;  // NaN for e4m3fn, infinity for e5m2
  if (a > 3.0e38f) return (unsigned char)(sign | overflow);
  if (a == 0.0f) return (unsigned char)sign;
  int e; frexpf(a, &e);
  int field = e - 1 + bias;
  unsigned bits;
  if (field < 1) {  // subnormal: a multiple of the smallest step (may round up to normal)
    bits = (unsigned)rintf(ldexpf(a, bias - 1 + mbits));
  } else {
    unsigned m = (unsigned)rintf(ldexpf(a, mbits - (e - 1)));
    if (m == (2u << mbits)) { m = 1u << mbits; field += 1; }
    bits = ((unsigned)field << mbits) | (m - (1u << mbits));
  }
  if (fn ? bits > 0x7eu : bits >= 0x7cu) bits = overflow;
  return (unsigned char)(sign | bits);
}

// ---- typed loads and stores (p is a byte pointer) ------------------------------------
#define PGK_LDST(NAME, STORAGE, MATH, TO_MATH, TO_STORAGE)                                   \
  __device__ __forceinline__ MATH pgk_ld_##NAME(const char* p) {                            \
    STORAGE s = *(const STORAGE*)p; return TO_MATH;                                         \
  }                                                                                         \
  __device__ __forceinline__ void pgk_st_##NAME(char* p, MATH v) { *(STORAGE*)p = TO_STORAGE; }
PGK_LDST(bool, unsigned char, bool, s != 0, (unsigned char)(v ? 1 : 0))
PGK_LDST(int8, signed char, signed char, s, v)
PGK_LDST(uint8, unsigned char, unsigned char, s, v)
PGK_LDST(int16, short, short, s, v)
PGK_LDST(int32, int, int, s, v)
PGK_LDST(int64, long long, long long, s, v)
PGK_LDST(float16, unsigned short, float, pgk_h2f(s), pgk_f2h(v))
PGK_LDST(bfloat16, unsigned short, float, pgk_b2f(s), pgk_f2b(v))
PGK_LDST(float32, float, float, s, v)
PGK_LDST(float64, double, double, s, v)
PGK_LDST(float8_e4m3fn, unsigned char, float,
         pgk_f8_to_f(s, 3, 7, true), pgk_f_to_f8(v, 3, 7, true))
PGK_LDST(float8_e5m2, unsigned char, float,
         pgk_f8_to_f(s, 2, 15, false), pgk_f_to_f8(v, 2, 15, false))

// ---- strided layout: element i's byte offset in each operand ------------------------
struct PgkLayout {
  long long n;
  long long ndim;
  long long shape[8];
  long long strides[4][8];
};
// ndim 0 and -2 mark the elementwise kernels' vector paths (one dimension; rows of unit
// element stride): the fallback loop of those kernels takes them as 1 and 2. See source.py.
template <int NOPS>
__device__ __forceinline__ void pgk_offsets(const PgkLayout& L, long long i, long long* off) {
  const int nd = L.ndim < 0 ? (int)-L.ndim : (int)L.ndim;
  if (nd <= 1) {
    #pragma unroll
    for (int k = 0; k < NOPS; ++k) off[k] = i * L.strides[k][0];
    return;
  }
  #pragma unroll
  for (int k = 0; k < NOPS; ++k) off[k] = 0;
  long long rem = i;
  #pragma unroll 1
  for (int d = nd - 1; d >= 0; --d) {
    long long c = rem % L.shape[d];
    rem /= L.shape[d];
    #pragma unroll
    for (int k = 0; k < NOPS; ++k) off[k] += c * L.strides[k][d];
  }
}
// Byte offset of a vector group (row, col) in operand k on those paths.
__device__ __forceinline__ long long pgk_group_offset(const PgkLayout& L, int k, unsigned row,
                                                      unsigned col) {
  return L.ndim == 0 ? (long long)col * L.strides[k][0]
                     : (long long)row * L.strides[k][0] + (long long)col * L.strides[k][1];
}
%(any_loaders)s
#define PGK_GRID_LOOP(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)gridDim.x * blockDim.x)

// ---- math with NumPy's semantics ------------------------------------------------------
template <typename T> __device__ __forceinline__ T pgk_floordiv_f(T a, T b) {
  if (b == 0) return a / b;
  T mod = fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return copysign((T)0, a / b);
  T fl = floor(div);
  if (div - fl > (T)0.5) fl += 1;
  return fl;
}
template <typename T> __device__ __forceinline__ T pgk_remainder_f(T a, T b) {
  if (b == 0) return fmod(a, b);
  T mod = fmod(a, b);
  if (mod != 0) { if ((b < 0) != (mod < 0)) mod += b; }
  else mod = copysign((T)0, b);
  return mod;
}
__device__ __forceinline__ long long pgk_floordiv_i(long long a, long long b) {
  if (b == 0) return 0;
  if (b == -1) return (long long)(0ull - (unsigned long long)a);
  long long q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
__device__ __forceinline__ unsigned long long pgk_floordiv_u(unsigned long long a,
                                                             unsigned long long b) {
  return b == 0 ? 0 : a / b;
}
__device__ __forceinline__ long long pgk_remainder_i(long long a, long long b) {
  if (b == 0 || b == -1) return 0;
  long long r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
__device__ __forceinline__ unsigned long long pgk_remainder_u(unsigned long long a,
                                                              unsigned long long b) {
  return b == 0 ? 0 : a % b;
}
// Integer power by squaring; a negative exponent gives 0 (NumPy refuses it).
__device__ __forceinline__ unsigned long long pgk_ipow(unsigned long long a, long long b) {
  if (b < 0) return 0;
  unsigned long long r = 1;
  while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
  return r;
}
__device__ __forceinline__ float pgk_sigmoid(float x) {
  float e = expf(-fabsf(x));
  return x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
__device__ __forceinline__ double pgk_sigmoid(double x) {
  double e = exp(-fabs(x));
  return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
__device__ __forceinline__ float pgk_logaddexp(float a, float b) {
  if (a == b) return a + 0.6931471805599453f;
  float d = a - b;
  return d > 0 ? a + log1pf(expf(-d)) : (d <= 0 ? b + log1pf(expf(d)) : d);
}
__device__ __forceinline__ double pgk_logaddexp(double a, double b) {
  if (a == b) return a + 0.6931471805599453;
  double d = a - b;
  return d > 0 ? a + log1p(exp(-d)) : (d <= 0 ? b + log1p(exp(d)) : d);
}
"""


def _build() -> str:
    from .ctypes_table import any_loaders

    return PDL_HELPER + _TEMPLATE.replace("%(any_loaders)s", any_loaders())


PREAMBLE = _build()
