"""Elementwise ops: one table, from which the public functions are made.

Kernel calling conventions (what a provider's kernel receives):

- unary ``kernel(x, out, **params)``: ``x`` already has ``out``'s shape.
- binary ``kernel(x1, x2, out, compute)``: array operands are views broadcast to
  ``out.shape`` (zero strides where broadcast); a Python scalar stays a scalar;
  ``compute`` is the promoted input dtype the op must be evaluated in (it differs from
  ``out.dtype`` for comparisons and for true division of integers).
- ``where``: ``kernel(condition, x1, x2, out)`` with all three broadcast.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .. import _dtypes as dt
from .. import config
from .._array import GPUArray
from .._dispatch import kernel_for
from .._promotion import check_int_fits, promote_types, result_type_with_scalar
from .._views import broadcast_shapes, broadcast_strides
from ._core import (
    device_of,
    dtypes_of,
    empty,
    fresh_of,
    kernel_on,
    scalar_or_array,
    task_aware,
)

# op name -> (rule, summary). Rules say which inputs are accepted and the output dtype.
UNARY: dict[str, tuple[str, str]] = {
    "abs": ("keep", "absolute value"),
    "negative": ("keep", "-x"),
    "positive": ("keep", "+x (a copy)"),
    "square": ("keep", "x * x"),
    "sign": ("keep", "-1, 0 or 1 by the sign of x"),
    "ceil": ("keep", "smallest integer >= x"),
    "floor": ("keep", "largest integer <= x"),
    "trunc": ("keep", "x rounded toward zero"),
    "round": ("keep", "x rounded to the nearest integer, halves to even"),
    "relu": ("keep", "max(x, 0)"),
    "sqrt": ("float", "square root"),
    "rsqrt": ("float", "1 / sqrt(x)"),
    "exp": ("float", "e ** x"),
    "expm1": ("float", "e ** x - 1, accurate near 0"),
    "log": ("float", "natural logarithm"),
    "log1p": ("float", "log(1 + x), accurate near 0"),
    "log2": ("float", "base-2 logarithm"),
    "log10": ("float", "base-10 logarithm"),
    "sin": ("float", "sine"),
    "cos": ("float", "cosine"),
    "tan": ("float", "tangent"),
    "asin": ("float", "inverse sine"),
    "acos": ("float", "inverse cosine"),
    "atan": ("float", "inverse tangent"),
    "sinh": ("float", "hyperbolic sine"),
    "cosh": ("float", "hyperbolic cosine"),
    "tanh": ("float", "hyperbolic tangent"),
    "asinh": ("float", "inverse hyperbolic sine"),
    "acosh": ("float", "inverse hyperbolic cosine"),
    "atanh": ("float", "inverse hyperbolic tangent"),
    "sigmoid": ("float", "1 / (1 + exp(-x))"),
    "silu": ("float", "x * sigmoid(x)"),
    "gelu": ("float", "x * Phi(x); approximate='tanh' for the tanh form"),
    "isfinite": ("to_bool", "x is neither infinite nor NaN"),
    "isinf": ("to_bool", "x is +inf or -inf"),
    "isnan": ("to_bool", "x is NaN"),
    "signbit": ("to_bool", "the sign bit of x is set"),
    "logical_not": ("logical", "not x"),
    "bitwise_invert": ("bitwise", "~x"),
}

BINARY: dict[str, tuple[str, str]] = {
    "add": ("arith", "x1 + x2"),
    "subtract": ("arith", "x1 - x2"),
    "multiply": ("arith", "x1 * x2"),
    "floor_divide": ("arith", "x1 // x2"),
    "remainder": ("arith", "x1 % x2, with the sign of x2"),
    "pow": ("arith", "x1 ** x2"),
    "maximum": ("arith", "the larger of x1 and x2 (NaN propagates)"),
    "minimum": ("arith", "the smaller of x1 and x2 (NaN propagates)"),
    "divide": ("float", "x1 / x2"),
    "atan2": ("float", "the angle of the point (x2, x1)"),
    "hypot": ("float", "sqrt(x1**2 + x2**2) without overflow"),
    "logaddexp": ("float", "log(exp(x1) + exp(x2))"),
    "copysign": ("float", "|x1| with the sign of x2"),
    "equal": ("compare_any", "x1 == x2"),
    "not_equal": ("compare_any", "x1 != x2"),
    "less": ("compare", "x1 < x2"),
    "less_equal": ("compare", "x1 <= x2"),
    "greater": ("compare", "x1 > x2"),
    "greater_equal": ("compare", "x1 >= x2"),
    "logical_and": ("logical", "x1 and x2"),
    "logical_or": ("logical", "x1 or x2"),
    "logical_xor": ("logical", "x1 xor x2"),
    "bitwise_and": ("bitwise", "x1 & x2"),
    "bitwise_or": ("bitwise", "x1 | x2"),
    "bitwise_xor": ("bitwise", "x1 ^ x2"),
    "bitwise_left_shift": ("shift", "x1 << x2"),
    "bitwise_right_shift": ("shift", "x1 >> x2 (arithmetic for signed types)"),
}


#: the ops of the tables above that the Array API defines for complex inputs
COMPLEX_UNARY = frozenset({
    "abs", "negative", "positive", "square", "sign", "round", "sqrt", "exp", "expm1", "log",
    "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "isfinite", "isinf", "isnan", "logical_not",
})  # fmt: skip
COMPLEX_BINARY = frozenset({
    "add", "subtract", "multiply", "divide", "pow", "equal", "not_equal", "logical_and",
    "logical_or", "logical_xor",
})  # fmt: skip


def _reject(op: str, dtype: dt.DataType, wants: str) -> TypeError:
    return TypeError(f"{op} wants {wants}, got {dtype.name}; cast with .astype() first")


def _reject_complex(op: str, dtype: dt.DataType) -> TypeError:
    return TypeError(
        f"{op} is not defined for complex dtypes (got {dtype.name}): complex numbers have no "
        "order; take gp.real(x), gp.imag(x) or gp.abs(x) first"
    )


def unary_out_dtype(op: str, dtype: dt.DataType) -> dt.DataType:
    rule = UNARY[op][0]
    if dtype.is_float8:
        raise _reject(op, dtype, "an arithmetic dtype (float8 is storage-only)")
    if dtype.is_complex:
        if op not in COMPLEX_UNARY:
            raise _reject_complex(op, dtype)
        if op == "abs":
            return dt.real_of(dtype)  # |x| of a complex number is real
    if rule == "keep":
        if dtype.kind == "b":
            raise _reject(op, dtype, "a numeric dtype")
        return dtype
    if rule == "float":
        return dtype if dtype.is_inexact else dt.DEFAULT_FLOAT
    if rule == "to_bool":
        if dtype.kind == "b":
            raise _reject(op, dtype, "a numeric dtype")
        return dt.bool_
    if rule == "logical":
        return dt.bool_
    if not (dtype.is_integer or dtype.kind == "b"):
        raise _reject(op, dtype, "an integer or bool dtype")
    return dtype


def binary_dtypes(op: str, x1: Any, x2: Any) -> tuple[dt.DataType, dt.DataType]:
    """(compute dtype, output dtype) for a binary op on these operands."""
    rule = BINARY[op][0]
    for x in (x1, x2):
        if isinstance(x, GPUArray) and x.dtype.is_float8:  # promotion lets f8 with f8 through
            raise _reject(op, x.dtype, "an arithmetic dtype (float8 is storage-only)")
    if isinstance(x1, GPUArray) and isinstance(x2, GPUArray):
        compute = promote_types(x1.dtype, x2.dtype)
    elif isinstance(x1, GPUArray):
        compute = result_type_with_scalar(x1.dtype, x2)
    else:
        compute = result_type_with_scalar(x2.dtype, x1)
    kinds = {x.dtype.kind for x in (x1, x2) if isinstance(x, GPUArray)}
    if rule in ("arith", "float", "compare") and "b" in kinds:
        raise _reject(op, dt.bool_, "numeric arrays")
    if compute.is_complex and op not in COMPLEX_BINARY:
        raise _reject_complex(op, compute)
    if rule == "arith":
        return compute, compute
    if rule == "float":
        out = compute if compute.is_inexact else dt.DEFAULT_FLOAT
        return out, out
    if rule in ("compare", "compare_any", "logical"):
        return compute, dt.bool_
    if compute.is_inexact or (rule == "shift" and compute.kind == "b"):
        raise _reject(
            op, compute, "integer" + (" or bool" if rule == "bitwise" else "") + " arrays"
        )
    return compute, compute


# _snapshot_is: the fast paths below compare a learned snapshot with
# `config._base if config._context.get() is None else config.current()`, which is
# config.current() without its frame (~45 ns of a ~0.9 us op): with no settings layer in
# this context the snapshot is the base one; a stale or missing base (None) never matches.

# op -> {dtype name: (settings snapshot, device, the kernel's `fresh`)}, as _fresh_binary
_fresh_unary: dict[str, dict[str, tuple[Any, Any, Any]]] = {}


def apply_unary(op: str, x: Any, backend: str | None = None, *, fresh_tried: bool = False,
                **params: Any) -> GPUArray:  # fmt: skip
    """op(x, **params); `fresh_tried`: the kernel's `fresh` declined `x` already."""
    if type(x) is not GPUArray and not isinstance(x, GPUArray):
        raise TypeError(f"{op} wants a GPUArray, got {type(x).__name__}")
    device = x._device
    # (kernel, output dtype) decided once per settings snapshot (the tiny-op hot path)
    snap = config.current()
    cache = snap.dispatch_cache
    key = ("unary", op, x._dtype.name, device.type, backend)
    hit = cache.get(key)
    if hit is None:
        out_dtype = unary_out_dtype(op, x._dtype)
        kernel = kernel_for(op, device, (x._dtype,), backend)
        hit = cache[key] = (kernel.fn, out_dtype, kernel.gated, fresh_of(kernel))
        known = _fresh_unary.get(op)
        if hit[3] is not None and known is not None and backend is None:
            known[x._dtype.name] = (snap, device, hit[3])
    if hit[3] is not None and not params and not fresh_tried:
        result = hit[3](x)
        if result is not NotImplemented:
            return result
    fn = task_aware(hit[0], hit[2])
    out = GPUArray.empty(x._shape, hit[1], device)
    fn(x, out, **params)
    return out


# Python scalar types that take the fast path as they are (NumPy scalars go the long way)
_SCALAR_TYPES = (float, int, bool, complex)


# op -> {dtype name: (settings snapshot, device, the kernel's `fresh`)}: what the public binary
# functions (and the operators) try before any dispatch, for two arrays of that dtype on
# that very device object; learned by _fast_binary, valid while the snapshot is current.
_fresh_binary: dict[str, dict[str, tuple[Any, Any, Any]]] = {}  # names: DataType hashes in Python


def _fast_binary(op: str, x1: Any, x2: Any, x: GPUArray, backend: str | None,
                 fresh_tried: bool = False) -> GPUArray:  # fmt: skip
    """x1 op x2 where `x` (one of them) is an array and the other is an array of the same
    dtype and device or a Python scalar. `fresh_tried`: the kernel's `fresh` path declined
    these operands already (it is not asked again).

    The dtype rule and the kernel are decided once per settings snapshot and operand types,
    two arrays' broadcast layout once per pair of shapes and strides; a Python int against
    an integer array is still range-checked on every call."""
    other = x2 if x is x1 else x1
    scalar_type = type(other) if type(other) is not GPUArray else None
    device = x._device
    snap = config.current()
    cache = snap.dispatch_cache
    key = ("binary", op, x._dtype.name, scalar_type, device.type, backend)
    hit = cache.get(key)
    if hit is None:
        compute, out_dtype = binary_dtypes(op, x1, x2)
        dtypes = (x._dtype,) if scalar_type else (x._dtype, x._dtype)
        kernel = kernel_for(op, device, dtypes, backend)
        bounds = None
        if scalar_type is int and x._dtype.is_integer:
            info = np.iinfo(x._dtype.to_numpy_dtype())
            bounds = (int(info.min), int(info.max))
        hit = cache[key] = (kernel.fn, compute, out_dtype, bounds, kernel.gated, fresh_of(kernel))
        known = _fresh_binary.get(op)
        # learned for the public function's test: two arrays, one dtype, one device object
        if hit[5] is not None and known is not None and scalar_type is None and backend is None \
                and x1._device is x2._device:  # fmt: skip
            known[x._dtype.name] = (snap, device, hit[5])
    else:
        bounds = hit[3]
        if bounds is not None and not bounds[0] <= other <= bounds[1]:
            check_int_fits(other, x._dtype)  # raises OverflowError naming the range
    if scalar_type is None and hit[5] is not None and not fresh_tried:  # the provider's fast path
        result = hit[5](x1, x2)
        if result is not NotImplemented:
            return result
    fn = task_aware(hit[0], hit[4])
    if scalar_type is None and x1._shape != x2._shape:  # two arrays that broadcast
        shape, s1, s2 = _broadcast_layout(x1, x2)
        out = GPUArray.empty(shape, hit[2], device)
        fn(x1._view(shape, s1, x1._offset), x2._view(shape, s2, x2._offset), out, hit[1])
        return out
    out = GPUArray.empty(x._shape, hit[2], device)
    fn(x1, x2, out, hit[1])
    return out


# (shape, strides) of two operands -> (result shape, each one's strides broadcast to it)
_layouts: dict[tuple[Any, ...], tuple[tuple[int, ...], ...]] = {}


def _broadcast_layout(x1: GPUArray, x2: GPUArray) -> tuple[tuple[int, ...], ...]:
    key = (x1._shape, x1._strides, x2._shape, x2._strides)
    hit = _layouts.get(key)
    if hit is None:
        shape = broadcast_shapes(x1._shape, x2._shape)  # ValueError for shapes that clash
        hit = (shape, broadcast_strides(x1._shape, x1._strides, shape),
               broadcast_strides(x2._shape, x2._strides, shape))  # fmt: skip
        if len(_layouts) >= 1024:
            _layouts.clear()  # endlessly new shapes: start over rather than grow
        _layouts[key] = hit
    return hit


def apply_binary(
    op: str, x1: Any, x2: Any, backend: str | None = None, out: GPUArray | None = None
) -> GPUArray:
    if out is None:
        t1, t2 = type(x1), type(x2)
        if t1 is GPUArray:
            if t2 is GPUArray:
                if x1._dtype is x2._dtype and (
                    x1._device is x2._device or x1._device == x2._device
                ):
                    return _fast_binary(op, x1, x2, x1, backend)
            elif t2 in _SCALAR_TYPES:
                return _fast_binary(op, x1, x2, x1, backend)
        elif t2 is GPUArray and t1 in _SCALAR_TYPES:
            return _fast_binary(op, x1, x2, x2, backend)
    a = scalar_or_array(x1, "x1")
    b = scalar_or_array(x2, "x2")
    device = device_of(a, b)
    compute, out_dtype = binary_dtypes(op, a, b)
    fn = kernel_on(op, device, dtypes_of(a, b), backend)
    shape = broadcast_shapes(*(x.shape for x in (a, b) if isinstance(x, GPUArray)))
    if out is None:
        out = empty(shape, out_dtype, device)
    else:
        out.check_writable(f"{op} in place: the target")
    if out.shape != shape or out.dtype is not out_dtype:
        raise ValueError(
            f"{op} in place: the result is {shape} {out_dtype.name} but the target is "
            f"{out.shape} {out.dtype.name}"
        )
    if isinstance(a, GPUArray):
        a = a.broadcast_to(shape)
    if isinstance(b, GPUArray):
        b = b.broadcast_to(shape)
    fn(a, b, out, compute)
    return out


# -- front doors ------------------------------------------------------------------------
# A public elementwise function (and the operators) hands its operands to its op's door.
# The door takes the tiny-op hot path: two arrays of one dtype on one device (or one array)
# whose kernel's `fresh` was learned under the settings in force (see _snapshot_is) go
# straight to it; what `fresh` declines goes to `declined` (the kernel, without asking
# `fresh` again), anything else to `general` (the whole op layer). _python_door is the
# reference; a provider's native extension may put in a door of its own (`use_front_doors`)
# that behaves the same in one C call (on the null driver the checks cost ~0.35 us in
# Python and ~0.1 us in C, of a one-element add of ~0.7-0.95 us).


class _Door(NamedTuple):
    """An op's door and what it is made of."""

    cell: list[Any]  # [door]: a door put in later is what the functions made now call
    known: dict[str, tuple[Any, Any, Any]]
    arity: int
    general: Callable[..., Any]
    declined: Callable[..., Any]


_doors: dict[str, _Door] = {}


def _python_door(known: dict[str, tuple[Any, Any, Any]], arity: int, general: Any,
                 declined: Any) -> Callable[..., Any]:  # fmt: skip
    """The door over `known` (dtype name -> (settings snapshot, device, fresh))."""
    current, layers = config.current, config._context.get  # see _snapshot_is

    def unary(x: Any) -> Any:
        if type(x) is GPUArray:
            hit = known.get(x._dtype.name)
            if (
                hit is not None and x._device is hit[1]
                and hit[0] is (config._base if layers() is None else current())
            ):  # fmt: skip
                result = hit[2](x)
                return declined(x) if result is NotImplemented else result
        return general(x)

    def binary(x1: Any, x2: Any) -> Any:
        if type(x1) is GPUArray and type(x2) is GPUArray:
            hit = known.get(x1._dtype.name)
            if (
                hit is not None and x2._dtype is x1._dtype and x1._device is hit[1]
                and x2._device is hit[1]
                and hit[0] is (config._base if layers() is None else current())
            ):  # fmt: skip
                result = hit[2](x1, x2)
                return declined(x1, x2) if result is NotImplemented else result
        return general(x1, x2)

    return unary if arity == 1 else binary


def front_door_settings() -> tuple[Any, ...]:
    """What a native door reads to follow the settings as `_snapshot_is` does: (the config
    module's globals, the name of its base snapshot there, the ContextVar of settings
    layers, and `config.current` for when a layer is in force)."""
    return (vars(config), "_base", config._context, config.current)


def use_front_doors(make: Callable[..., Any]) -> None:
    """Give every elementwise function the door
    ``make(known, arity, general, declined, *front_door_settings())``: ``known`` is the op's
    dict of learned fast paths (dtype name -> (snapshot, device, fresh)), which the op layer
    keeps filling; ``general`` and ``declined`` take the operands. The door must behave as
    `_python_door`."""
    settings = front_door_settings()
    for d in _doors.values():
        d.cell[0] = make(d.known, d.arity, d.general, d.declined, *settings)


def _make_door(op: str, known: dict[str, Any], arity: int, general: Callable[..., Any],
               declined: Callable[..., Any]) -> list[Any]:  # fmt: skip
    cell = [_python_door(known, arity, general, declined)]
    _doors[op] = _Door(cell, known, arity, general, declined)
    return cell


def _make_unary(op: str, summary: str) -> Callable[..., GPUArray]:
    known = _fresh_unary[op] = {}
    door = _make_door(
        op, known, 1,
        lambda x: apply_unary(op, x, None),
        lambda x: apply_unary(op, x, None, fresh_tried=True),
    )  # fmt: skip

    def fn(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
        if backend is None:
            return door[0](x)
        return apply_unary(op, x, backend)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {summary}."
    return fn


def _make_binary(op: str, summary: str) -> Callable[..., GPUArray]:
    known = _fresh_binary[op] = {}
    door = _make_door(
        op, known, 2,
        lambda x1, x2: apply_binary(op, x1, x2, None),
        lambda x1, x2: _fast_binary(op, x1, x2, x1, None, True),
    )  # fmt: skip

    def fn(x1: Any, x2: Any, /, *, backend: str | None = None) -> GPUArray:
        if backend is None:
            return door[0](x1, x2)
        return apply_binary(op, x1, x2, backend)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {summary}, with broadcasting and Array API type promotion."
    return fn


# Spelled out (not built from the tables) so type checkers see the star-exported names.
__all__ = [
    "abs", "negative", "positive", "square", "sign", "ceil", "floor", "trunc", "round", "relu",
    "sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid",
    "silu", "gelu", "isfinite", "isinf", "isnan", "signbit", "logical_not", "bitwise_invert",
    "add", "subtract", "multiply", "floor_divide", "remainder", "pow", "maximum", "minimum",
    "divide", "atan2", "hypot", "logaddexp", "copysign", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
    "clip", "where",
]  # fmt: skip

# One public function per table entry (spelled out so tools and readers can find them).
abs = _make_unary("abs", UNARY["abs"][1])
negative = _make_unary("negative", UNARY["negative"][1])
positive = _make_unary("positive", UNARY["positive"][1])
square = _make_unary("square", UNARY["square"][1])
sign = _make_unary("sign", UNARY["sign"][1])
ceil = _make_unary("ceil", UNARY["ceil"][1])
floor = _make_unary("floor", UNARY["floor"][1])
trunc = _make_unary("trunc", UNARY["trunc"][1])
round = _make_unary("round", UNARY["round"][1])
relu = _make_unary("relu", UNARY["relu"][1])
sqrt = _make_unary("sqrt", UNARY["sqrt"][1])
rsqrt = _make_unary("rsqrt", UNARY["rsqrt"][1])
exp = _make_unary("exp", UNARY["exp"][1])
expm1 = _make_unary("expm1", UNARY["expm1"][1])
log = _make_unary("log", UNARY["log"][1])
log1p = _make_unary("log1p", UNARY["log1p"][1])
log2 = _make_unary("log2", UNARY["log2"][1])
log10 = _make_unary("log10", UNARY["log10"][1])
sin = _make_unary("sin", UNARY["sin"][1])
cos = _make_unary("cos", UNARY["cos"][1])
tan = _make_unary("tan", UNARY["tan"][1])
asin = _make_unary("asin", UNARY["asin"][1])
acos = _make_unary("acos", UNARY["acos"][1])
atan = _make_unary("atan", UNARY["atan"][1])
sinh = _make_unary("sinh", UNARY["sinh"][1])
cosh = _make_unary("cosh", UNARY["cosh"][1])
tanh = _make_unary("tanh", UNARY["tanh"][1])
asinh = _make_unary("asinh", UNARY["asinh"][1])
acosh = _make_unary("acosh", UNARY["acosh"][1])
atanh = _make_unary("atanh", UNARY["atanh"][1])
sigmoid = _make_unary("sigmoid", UNARY["sigmoid"][1])
silu = _make_unary("silu", UNARY["silu"][1])
isfinite = _make_unary("isfinite", UNARY["isfinite"][1])
isinf = _make_unary("isinf", UNARY["isinf"][1])
isnan = _make_unary("isnan", UNARY["isnan"][1])
signbit = _make_unary("signbit", UNARY["signbit"][1])
logical_not = _make_unary("logical_not", UNARY["logical_not"][1])
bitwise_invert = _make_unary("bitwise_invert", UNARY["bitwise_invert"][1])
add = _make_binary("add", BINARY["add"][1])
subtract = _make_binary("subtract", BINARY["subtract"][1])
multiply = _make_binary("multiply", BINARY["multiply"][1])
floor_divide = _make_binary("floor_divide", BINARY["floor_divide"][1])
remainder = _make_binary("remainder", BINARY["remainder"][1])
pow = _make_binary("pow", BINARY["pow"][1])
maximum = _make_binary("maximum", BINARY["maximum"][1])
minimum = _make_binary("minimum", BINARY["minimum"][1])
divide = _make_binary("divide", BINARY["divide"][1])
atan2 = _make_binary("atan2", BINARY["atan2"][1])
hypot = _make_binary("hypot", BINARY["hypot"][1])
logaddexp = _make_binary("logaddexp", BINARY["logaddexp"][1])
copysign = _make_binary("copysign", BINARY["copysign"][1])
equal = _make_binary("equal", BINARY["equal"][1])
not_equal = _make_binary("not_equal", BINARY["not_equal"][1])
less = _make_binary("less", BINARY["less"][1])
less_equal = _make_binary("less_equal", BINARY["less_equal"][1])
greater = _make_binary("greater", BINARY["greater"][1])
greater_equal = _make_binary("greater_equal", BINARY["greater_equal"][1])
logical_and = _make_binary("logical_and", BINARY["logical_and"][1])
logical_or = _make_binary("logical_or", BINARY["logical_or"][1])
logical_xor = _make_binary("logical_xor", BINARY["logical_xor"][1])
bitwise_and = _make_binary("bitwise_and", BINARY["bitwise_and"][1])
bitwise_or = _make_binary("bitwise_or", BINARY["bitwise_or"][1])
bitwise_xor = _make_binary("bitwise_xor", BINARY["bitwise_xor"][1])
bitwise_left_shift = _make_binary("bitwise_left_shift", BINARY["bitwise_left_shift"][1])
bitwise_right_shift = _make_binary("bitwise_right_shift", BINARY["bitwise_right_shift"][1])


def gelu(x: GPUArray, /, *, approximate: str = "none", backend: str | None = None) -> GPUArray:
    """Elementwise GELU, x * Phi(x): exact (erf) by default, or approximate="tanh"."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return apply_unary("gelu", x, backend, approximate=approximate)


def where(condition: GPUArray, x1: Any, x2: Any, /, *, backend: str | None = None) -> GPUArray:
    """Elements of x1 where condition is true, else of x2 (all three broadcast)."""
    if not isinstance(condition, GPUArray):
        raise TypeError(f"where: condition must be a GPUArray, got {type(condition).__name__}")
    a = scalar_or_array(x1, "x1")
    b = scalar_or_array(x2, "x2")
    device = device_of(condition, a, b)
    if isinstance(a, GPUArray) and isinstance(b, GPUArray):
        out_dtype = promote_types(a.dtype, b.dtype)
    elif isinstance(a, GPUArray):
        out_dtype = result_type_with_scalar(a.dtype, b)  # type: ignore[arg-type]
    elif isinstance(b, GPUArray):
        out_dtype = result_type_with_scalar(b.dtype, a)
    else:
        raise TypeError("where: at least one of x1 and x2 must be a GPUArray")
    fn = kernel_on("where", device, dtypes_of(condition, a, b), backend)
    shapes = [x.shape for x in (condition, a, b) if isinstance(x, GPUArray)]
    shape = broadcast_shapes(*shapes)
    out = empty(shape, out_dtype, device)
    cond = condition.broadcast_to(shape)
    a = a.broadcast_to(shape) if isinstance(a, GPUArray) else a
    b = b.broadcast_to(shape) if isinstance(b, GPUArray) else b
    fn(cond, a, b, out)
    return out


def clip(
    x: GPUArray,
    /,
    min: Any = None,
    max: Any = None,
    *,
    backend: str | None = None,
) -> GPUArray:
    """x limited to [min, max]; either bound may be None. Keeps x's dtype."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"clip wants a GPUArray, got {type(x).__name__}")
    out = x
    if min is not None:
        out = apply_binary("maximum", out, min, backend)
    if max is not None:
        out = apply_binary("minimum", out, max, backend)
    if out is x:
        out = apply_unary("positive", x, backend)
    if out.dtype is not x.dtype:
        out = out.astype(x.dtype)
    return out
