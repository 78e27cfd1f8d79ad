"""The C expression of each elementwise op, for a given compute type.

`unary_expr(op, t, **params)` and `binary_expr(op, t)` return C expressions over `a` (and
`b`), both of `t.math`; the result is of `t.math`, or bool for predicates and comparisons.
The semantics follow the NumPy CPU backend: NaN propagates through maximum/minimum, integer
division and remainder round toward minus infinity (0 for a zero divisor), shifts by the
bit width or more give 0 (or -1 for negative signed values).
"""

from __future__ import annotations

from .ctypes_table import CType


def _f(t: CType, name: str) -> str:
    """The float or double flavour of a C math function."""
    return f"{name}f" if t.math == "float" else name


_FLOAT_FUNCS = {
    "sqrt": "sqrt", "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p",
    "log2": "log2", "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh",
}  # fmt: skip

#: unary ops whose result is bool
PREDICATES = frozenset({"isfinite", "isinf", "isnan", "signbit", "logical_not"})


def unary_expr(op: str, t: CType, approximate: str = "none") -> str:
    m = t.math
    fl = t.is_float_math
    if op in _FLOAT_FUNCS:
        return f"{_f(t, _FLOAT_FUNCS[op])}(a)"
    simple = {
        "negative": f"({m})(-a)",
        "positive": "a",
        "square": f"({m})(a * a)",
        "rsqrt": f"(({m})1 / {_f(t, 'sqrt')}(a))",
        "sigmoid": "pgk_sigmoid(a)",
        "silu": "(a * pgk_sigmoid(a))",
        "logical_not": "(a == 0)",
    }
    if op in simple:
        return simple[op]
    if op == "abs":
        return f"{_f(t, 'fabs')}(a)" if fl else (f"({m})(a < 0 ? -a : a)" if t.is_signed else "a")
    if op == "sign":
        if fl:
            return f"(a > 0 ? ({m})1 : (a < 0 ? ({m})-1 : a))"
        return f"({m})((a > 0) - (a < 0))" if t.is_signed else f"({m})(a > 0)"
    if op in ("ceil", "floor", "trunc", "round"):
        return f"{_f(t, 'rint' if op == 'round' else op)}(a)" if fl else "a"
    if op == "relu":
        return f"(a < 0 ? ({m})0 : a)" if t.is_signed else "a"
    if op == "gelu":
        if approximate == "tanh":
            inner = f"({m})0.7978845608028654 * (a + ({m})0.044715 * a * a * a)"
            return f"(({m})0.5 * a * (({m})1 + {_f(t, 'tanh')}({inner})))"
        # erfc(-x/sqrt2) = 1 + erf(x/sqrt2) without the cancellation for negative x
        return f"(({m})0.5 * a * {_f(t, 'erfc')}(-a * ({m})0.7071067811865476))"
    if op == "isnan":
        return "(a != a)" if fl else "false"
    if op == "isinf":
        return "(a == a && (a - a) != (a - a))" if fl else "false"
    if op == "isfinite":
        return "((a - a) == (a - a))" if fl else "true"
    if op == "signbit":
        if t.math == "float":
            return "(__float_as_int(a) < 0)"
        if t.math == "double":
            return "(__double_as_longlong(a) < 0)"
        return "(a < 0)" if t.is_signed else "false"
    if op == "bitwise_invert":
        return "(!a)" if t.is_bool else f"({m})(~a)"
    raise KeyError(f"no CUDA expression for unary op {op!r}")


def binary_expr(op: str, t: CType) -> str:
    m = t.math
    fl = t.is_float_math
    simple = {
        "add": f"({m})(a + b)",
        "subtract": f"({m})(a - b)",
        "multiply": f"({m})(a * b)",
        "divide": "(a / b)",
        "atan2": f"{_f(t, 'atan2')}(a, b)",
        "hypot": f"{_f(t, 'hypot')}(a, b)",
        "copysign": f"{_f(t, 'copysign')}(a, b)",
        "logaddexp": "pgk_logaddexp(a, b)",
        "equal": "(a == b)",
        "not_equal": "(a != b)",
        "less": "(a < b)",
        "less_equal": "(a <= b)",
        "greater": "(a > b)",
        "greater_equal": "(a >= b)",
        "logical_and": "((a != 0) && (b != 0))",
        "logical_or": "((a != 0) || (b != 0))",
        "logical_xor": "((a != 0) != (b != 0))",
        "bitwise_and": f"({m})(a & b)",
        "bitwise_or": f"({m})(a | b)",
        "bitwise_xor": f"({m})(a ^ b)",
    }
    if op in simple:
        return simple[op]
    if op in ("maximum", "minimum"):
        cmp = ">" if op == "maximum" else "<"
        return f"((a != a || a {cmp} b) ? a : b)" if fl else f"(a {cmp} b ? a : b)"
    if op in ("floor_divide", "remainder"):
        kind = "floordiv" if op == "floor_divide" else "remainder"
        if fl:
            return f"pgk_{kind}_f<{m}>(a, b)"
        if t.is_signed:
            return f"({m})pgk_{kind}_i((long long)a, (long long)b)"
        return f"({m})pgk_{kind}_u((unsigned long long)a, (unsigned long long)b)"
    if op == "pow":
        if fl:
            return f"{_f(t, 'pow')}(a, b)"
        return f"({m})pgk_ipow((unsigned long long)(long long)a, (long long)b)"
    if op == "bitwise_left_shift":
        return (
            f"(((long long)b < 0 || (long long)b >= {t.bits}) ? ({m})0 : "
            f"({m})((unsigned long long)(long long)a << (int)b))"
        )
    if op == "bitwise_right_shift":
        fill = f"({m})(a < 0 ? -1 : 0)" if t.is_signed else f"({m})0"
        return f"(((long long)b < 0 || (long long)b >= {t.bits}) ? {fill} : ({m})(a >> (int)b))"
    raise KeyError(f"no CUDA expression for binary op {op!r}")
