"""CUDA C of the complex inverse functions (asinh, asin, acosh, acos, atanh, atan) and pow.

Appended to `complex_math`'s helpers, so it is written in the same dialect: ``CX`` is the
complex struct, ``R`` its part type, ``fnF(`` a float function of that flavour, and the
placeholders ``ASYMX`` (the magnitude past which the asymptotic form log(2z) is exact to
the last bit: 2^27 in double, 2^12 in float) and ``PI_2`` are filled in there.

Branch cuts and special values are C99 Annex G's, which the Array API adopts. asinh and
atanh are odd and conjugate-symmetric, so they are computed on (|x|, |y|) and the signs put
back; asin(z) = -i asinh(iz) and atan(z) = -i atanh(iz) are exact swaps of the parts;
acosh is conjugate-symmetric and acos comes from it by moving parts. The finite formulas
are Kahan's ("Branch cuts for complex elementary functions", 1987): sums of two square
roots' products whose terms share a sign, so nothing cancels near the cuts.
"""

INVERSE_HELPERS = r"""
__device__ __forceinline__ CX pgk_cx_pair(R re, R im) { CX r; r.re = re; r.im = im; return r; }
__device__ __forceinline__ CX pgk_cx_swap(CX a) { return pgk_cx_pair(a.im, a.re); }
// log(2z) for a point with re, im >= 0 of huge (or infinite) magnitude
__device__ __forceinline__ CX pgk_cx_log2z(R x, R y) {
  return pgk_cx_pair(logF(hypotF(x, y)) + (R)0.6931471805599453, atan2F(y, x));
}
// asinh: NaN parts first (the standard's table), then the first quadrant
__device__ __forceinline__ CX pgk_cx_asinh(CX a) {
  R x = fabsF(a.re), y = fabsF(a.im);
  if (x != x || y != y) {
    if (pgk_isinf(x)) return pgk_cx_pair(a.re, y - y + a.im);   // inf + NaN i
    if (pgk_isinf(y)) return pgk_cx_pair(y, a.re + a.re);        // +-inf + NaN i
    if (y == (R)0) return pgk_cx_pair(a.re, a.im);               // NaN + 0i keeps its zero
    R q = x + y; return pgk_cx_pair(q, q);
  }
  CX r;
  if (x > (R)ASYMX || y > (R)ASYMX) {
    r = pgk_cx_log2z(x, y);
  } else {
    // with w = iz: s1 = sqrt(1 - w) = sqrt((1 + y) - ix), s2 = sqrt(1 + w)
    CX s1 = pgk_cx_sqrt(pgk_cx_pair((R)1 + y, -x));
    CX s2 = pgk_cx_sqrt(pgk_cx_pair((R)1 - y, x));
    r.re = asinhF(s1.re * s2.im - s1.im * s2.re);
    r.im = atan2F(y, s1.re * s2.re - s1.im * s2.im);
  }
  return pgk_cx_pair(copysignF(r.re, a.re), copysignF(r.im, a.im));
}
// asin(z) = -i asinh(iz): the parts swapped in and out
__device__ __forceinline__ CX pgk_cx_asin(CX a) {
  return pgk_cx_swap(pgk_cx_asinh(pgk_cx_swap(a)));
}
// acosh on (x, |y|): re >= 0, im in [0, pi]; the caller puts the sign of y on one part
__device__ __forceinline__ CX pgk_cx_acosh_upper(R x, R y) {
  if (pgk_isinf(x) || pgk_isinf(y) || fabsF(x) > (R)ASYMX || y > (R)ASYMX) {
    return pgk_cx_log2z(x, y);  // log(2z), its angle in [0, pi] as atan2 gives it
  }
  CX s1 = pgk_cx_sqrt(pgk_cx_pair(x - (R)1, y));  // sqrt(z - 1)
  CX s2 = pgk_cx_sqrt(pgk_cx_pair(x + (R)1, y));  // sqrt(z + 1)
  return pgk_cx_pair(asinhF(s1.re * s2.re + s1.im * s2.im), (R)2 * atan2F(s1.im, s2.re));
}
__device__ __forceinline__ CX pgk_cx_acosh(CX a) {
  R x = a.re, y = a.im;
  if (x != x || y != y) {
    if (pgk_isinf(x)) return pgk_cx_pair(fabsF(x), y);              // inf + NaN i
    if (pgk_isinf(y)) return pgk_cx_pair(fabsF(y), x);              // inf + NaN i
    if (x == (R)0) return pgk_cx_pair(y, copysignF((R)PI_2, y));  // NaN +- pi/2 i
    R q = x + y; return pgk_cx_pair(q, q);
  }
  CX h = pgk_cx_acosh_upper(x, fabsF(y));
  return pgk_cx_pair(h.re, copysignF(h.im, y));
}
// acos from acosh of the same point: acos(z) = -i acosh(z) above the real axis, i acosh(z)
// below it, which is (im, -re) and (-im, re) of acosh(z): with h = acosh(x + i|y|),
// acos = h.im - i sign(y) h.re.
__device__ __forceinline__ CX pgk_cx_acos(CX a) {
  R x = a.re, y = a.im;
  if (x != x || y != y) {
    if (pgk_isinf(x)) return pgk_cx_pair(y, -fabsF(x));            // NaN -+ inf i
    if (pgk_isinf(y)) return pgk_cx_pair(x, -y);                     // NaN -+ inf i
    if (x == (R)0) return pgk_cx_pair((R)PI_2, y);                   // pi/2 + NaN i
    R q = x + y; return pgk_cx_pair(q, q);
  }
  CX h = pgk_cx_acosh_upper(x, fabsF(y));
  return pgk_cx_pair(h.im, -copysignF(h.re, y));
}
// atanh: NaN parts first, then the first quadrant
__device__ __forceinline__ CX pgk_cx_atanh(CX a) {
  R x = fabsF(a.re), y = fabsF(a.im);
  if (x != x || y != y) {
    if (pgk_isinf(x)) return pgk_cx_pair(copysignF((R)0, a.re), a.im);          // 0 + NaN i
    if (pgk_isinf(y)) return pgk_cx_pair(copysignF((R)0, a.re), copysignF((R)PI_2, a.im));
    if (x == (R)0) return pgk_cx_pair(a.re, a.im);                              // 0 + NaN i
    R q = x + y; return pgk_cx_pair(q, q);
  }
  R re, im;
  if (pgk_isinf(x) || pgk_isinf(y)) {
    re = (R)0; im = (R)PI_2;
  } else if (x > (R)ASYMX || y > (R)ASYMX) {
    // atanh(z) = 1/z + i pi/2 + O(z^-3); |z|^2 formed as two divisions by |z|
    R h = hypotF(x, y);
    re = (x / h) / h; im = (R)PI_2 - (y / h) / h;
  } else {
    R d = ((R)1 - x) * ((R)1 - x) + y * y;  // |1 - z|^2
    if (d >= (R)0.25) {
      re = (R)0.25 * log1pF((R)4 * x / d);  // log|1 + z|^2 / |1 - z|^2 = log(1 + 4x / d)
    } else {  // near z = 1: the two logs have opposite signs, and d may underflow
      re = (R)0.5 * (logF(hypotF((R)1 + x, y)) - logF(hypotF((R)1 - x, y)));
    }
    im = (R)0.5 * atan2F((R)2 * y, ((R)1 - x) * ((R)1 + x) - y * y);
  }
  return pgk_cx_pair(copysignF(re, a.re), copysignF(im, a.im));
}
// atan(z) = -i atanh(iz): the parts swapped in and out
__device__ __forceinline__ CX pgk_cx_atan(CX a) {
  return pgk_cx_swap(pgk_cx_atanh(pgk_cx_swap(a)));
}
// a ** b as NumPy computes it: 1 for a zero exponent, 0 for a zero base under an exponent
// with a positive real part (NaN under any other), integral real exponents below 100 in
// magnitude by repeated squaring (exact where the products are), else exp(b log a).
__device__ __forceinline__ CX pgk_cx_pow(CX a, CX b) {
  if (b.re == (R)0 && b.im == (R)0) return pgk_cx_pair((R)1, (R)0);
  if (a.re == (R)0 && a.im == (R)0) {
    if (b.re > (R)0) return pgk_cx_pair((R)0, (R)0);  // |0 ** b| = 0 ** Re b
    R zero = (R)0, q = zero / zero;  // 0 ** z is ill-defined off the positive real axis
    return pgk_cx_pair(q, q);
  }
  if (b.im == (R)0 && b.re == truncF(b.re) && fabsF(b.re) < (R)100) {
    int n = (int)b.re, m = n < 0 ? -n : n;
    if (n == 1) return a;
    CX acc = pgk_cx_pair((R)1, (R)0), sq = a;
    bool first = true;
    while (m) {  // the product of the squares a^(2^k) over the set bits of |n|
      if (m & 1) { acc = first ? sq : pgk_cx_mul(acc, sq); first = false; }
      m >>= 1;
      if (m) sq = pgk_cx_mul(sq, sq);
    }
    return n < 0 ? pgk_cx_div(pgk_cx_pair((R)1, (R)0), acc) : acc;
  }
  return pgk_cx_exp(pgk_cx_mul(b, pgk_cx_log(a)));
}
"""
