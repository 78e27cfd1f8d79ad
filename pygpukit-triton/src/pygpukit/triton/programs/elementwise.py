"""One Triton program for every elementwise op: the op is a constexpr string, so each
(op, dtypes, layout kind) compiles to its own kernel from this one template.

Operands are up to 4-D strided (after merging contiguous axes; zero strides broadcast)
or, with CONTIG, flat and contiguous (the vector path: 16-byte loads when aligned). An
operand with X1_SCALAR / X2_SCALAR is a Python number passed by value. Math runs in the
compute type (float32 for the half types).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _offsets(i, s1, s2, s3, t0, t1, t2, t3):
    i3 = i % s3
    r = i // s3
    i2 = r % s2
    r = r // s2
    i1 = r % s1
    i0 = r // s1
    return i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3


@triton.jit
def _tanh(v):
    a = tl.abs(v)
    e = tl.exp(-2.0 * a)
    big = (1.0 - e) / (1.0 + e)
    a2 = a * a
    small = a * (1.0 - a2 * (1.0 / 3.0 - a2 * (2.0 / 15.0)))  # Taylor: no cancellation near 0
    t = tl.where(a < 0.05, small, big)
    return tl.where(v < 0, -t, t)


@triton.jit
def _unary(v, OP: tl.constexpr, APPROX: tl.constexpr):
    if OP == "abs":
        y = tl.abs(v)
    elif OP == "negative":
        y = -v
    elif OP == "positive":
        y = v
    elif OP == "square":
        y = v * v
    elif OP == "relu":
        y = tl.where(v > 0, v, tl.where(v == v, 0.0, v))  # NaN stays NaN
    elif OP == "sqrt":
        y = tl.sqrt(v)
    elif OP == "rsqrt":
        y = 1.0 / tl.sqrt(v)
    elif OP == "exp":
        y = tl.exp(v)
    elif OP == "log":
        y = tl.log(v)
    elif OP == "log2":
        y = tl.log2(v)
    elif OP == "sin":
        y = tl.sin(v)
    elif OP == "cos":
        y = tl.cos(v)
    elif OP == "tanh":
        y = _tanh(v)
    elif OP == "sigmoid":
        y = 1.0 / (1.0 + tl.exp(-v))
    elif OP == "silu":
        y = v / (1.0 + tl.exp(-v))
    else:  # gelu
        if APPROX:
            inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
            y = 0.5 * v * (1.0 + _tanh(inner))
        else:
            y = 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    return y


@triton.jit
def _binary(a, b, OP: tl.constexpr):
    if OP == "add":
        y = a + b
    elif OP == "subtract":
        y = a - b
    elif OP == "multiply":
        y = a * b
    elif OP == "divide":
        y = a / b
    elif OP == "swiglu":  # silu(gate) * up, the gated MLP of Llama-family models
        y = a / (1.0 + tl.exp(-a)) * b
    elif OP == "maximum":
        y = tl.where((a != a) | (b != b), a + b, tl.maximum(a, b))  # NaN propagates
    else:  # minimum
        y = tl.where((a != a) | (b != b), a + b, tl.minimum(a, b))
    return y


@triton.jit
def unary(x, out, n, s1, s2, s3, x0, x1, x2, x3, o0, o1, o2, o3, OP: tl.constexpr,
          APPROX: tl.constexpr, F64: tl.constexpr, CONTIG: tl.constexpr,
          BLOCK: tl.constexpr):  # fmt: skip
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    ct = tl.float64 if F64 else tl.float32
    if CONTIG:
        xo = i
        oo = i
    else:
        xo = _offsets(i, s1, s2, s3, x0, x1, x2, x3)
        oo = _offsets(i, s1, s2, s3, o0, o1, o2, o3)
    v = tl.load(x + xo, mask=m, other=1.0).to(ct)
    tl.store(out + oo, _unary(v, OP, APPROX).to(out.dtype.element_ty), mask=m)


@triton.jit
def binary(a, b, out, n, s1, s2, s3, a0, a1, a2, a3, b0, b1, b2, b3, o0, o1, o2, o3,
           OP: tl.constexpr, A_SCALAR: tl.constexpr, B_SCALAR: tl.constexpr,
           F64: tl.constexpr, CONTIG: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    ct = tl.float64 if F64 else tl.float32
    if CONTIG:
        oo = i
    else:
        oo = _offsets(i, s1, s2, s3, o0, o1, o2, o3)
    if A_SCALAR:
        va = tl.zeros([BLOCK], ct) + a  # (a Python float under the interpreter)
    elif CONTIG:
        va = tl.load(a + i, mask=m, other=1.0).to(ct)
    else:
        va = tl.load(a + _offsets(i, s1, s2, s3, a0, a1, a2, a3), mask=m, other=1.0).to(ct)
    if B_SCALAR:
        vb = tl.zeros([BLOCK], ct) + b
    elif CONTIG:
        vb = tl.load(b + i, mask=m, other=1.0).to(ct)
    else:
        vb = tl.load(b + _offsets(i, s1, s2, s3, b0, b1, b2, b3), mask=m, other=1.0).to(ct)
    tl.store(out + oo, _binary(va, vb, OP).to(out.dtype.element_ty), mask=m)
