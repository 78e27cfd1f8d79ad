"""Complex arrays on cuda as two strided real planes: the ops that act on parts separately.

A complex64 array is, in memory, float32 pairs: its real parts are a float32 view with the
same shape and strides, its imaginary parts the same view 4 bytes further on (8 for
complex128). The ops whose result is computed part by part (copies, casts, fill, real,
imag, conj, negation, rounding, addition, subtraction, where, sum, mean, cumulative sums)
or from the two parts of one element (abs = hypot(re, im), angle = atan2(im, re), == and != as both
parts compared, the logical ops on "either part nonzero") therefore run on the provider's
existing real kernels over those views: no new kernel source, the same NaN, infinity and
signed-zero behaviour as the real ops. The ops that mix parts (multiply, divide, ...) are
`complex_math`'s NVRTC kernels.
"""

from __future__ import annotations

from typing import Any

from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import provider
from .kernels import source

#: elementwise ops served here for complex inputs (compute dtype complex)
UNARY_OPS = frozenset({"negative", "positive", "abs", "logical_not", "round"})
BINARY_OPS = frozenset({
    "add", "subtract", "equal", "not_equal", "logical_and", "logical_or", "logical_xor",
})  # fmt: skip
_LOGICAL = frozenset({"logical_and", "logical_or", "logical_xor"})


def part_dtype(dtype: dt.DataType) -> dt.DataType:
    """The real dtype of a complex dtype's parts: float64 for complex128, else float32."""
    return dt.float64 if dtype is dt.complex128 else dt.float32


def plane(x: GPUArray, imag: bool) -> GPUArray:
    """The real (or imaginary) parts of complex `x` as a strided real view of its memory."""
    part = part_dtype(x.dtype)
    offset = x._offset + (part.itemsize if imag else 0)
    return GPUArray(x._buffer, x._shape, part, x._device, x._strides, offset, x._readonly)


def raw(x: GPUArray) -> GPUArray:
    """x's bits as an int64 view (complex128: a trailing axis of two), for exact copies."""
    if x.dtype is dt.complex64:
        return GPUArray(x._buffer, x._shape, dt.int64, x._device, x._strides, x._offset)
    if x.dtype is dt.complex128:
        return GPUArray(x._buffer, (*x._shape, 2), dt.int64, x._device, (*x._strides, 8),
                        x._offset)  # fmt: skip
    return x


def raw_copy(src: GPUArray, out: GPUArray) -> None:
    """out[...] = src bit for bit (same dtype, any strides)."""
    provider.copy(raw(src), raw(out))


def _parts(x: Any, imag: bool) -> Any:
    """One part of an operand: a plane of a complex array, a real array itself (imaginary
    part 0), or a part of a Python scalar."""
    if isinstance(x, GPUArray):
        if x.dtype.is_complex:
            return plane(x, imag)
        return 0.0 if imag else x
    z = complex(x)
    return z.imag if imag else z.real


def _run(spec: source.KernelSpec, out: GPUArray, inputs: list[Any]) -> None:
    provider.run(spec, out, inputs)


def _copy_into(part: Any, out: GPUArray) -> None:
    """A real array (converted) or a real scalar into the real view `out`."""
    if isinstance(part, GPUArray):
        provider.copy(part, out)
    else:
        provider.fill(out, part)


# -- copies, casts and fill --------------------------------------------------------------
def copy(src: GPUArray, out: GPUArray) -> None:
    """The copy kernel when either side is complex: real -> complex zero-fills the imaginary
    parts; complex -> complex converts each part; complex -> bool is "either part nonzero"
    (the standard's rule); complex -> real is refused."""
    if out.dtype is dt.bool_:
        provider.copy(plane(src, False), out)
        second = GPUArray.empty(out.shape, dt.bool_, out.device)
        provider.copy(plane(src, True), second)
        _run(source.binary_kernel("logical_or", dt.bool_, dt.bool_), out, [out, second])
        return
    if not out.dtype.is_complex:
        raise TypeError(
            f"cuda copy: cannot cast {src.dtype.name} to {out.dtype.name} (complex to real "
            "drops the imaginary part); take gp.real(x) or gp.abs(x) first"
        )
    if src.dtype is out.dtype:
        raw_copy(src, out)
        return
    _copy_into(_parts(src, False), plane(out, False))
    _copy_into(_parts(src, True), plane(out, True))


def fill(out: GPUArray, value: bool | int | float | complex) -> None:
    z = complex(value)
    provider.fill(plane(out, False), z.real)
    provider.fill(plane(out, True), z.imag)


# -- parts ---------------------------------------------------------------------------------
def real(x: GPUArray, out: GPUArray) -> None:
    provider.copy(plane(x, False), out)


def imag(x: GPUArray, out: GPUArray) -> None:
    provider.copy(plane(x, True), out)


def conj(x: GPUArray, out: GPUArray) -> None:
    part = part_dtype(x.dtype)
    provider.copy(plane(x, False), plane(out, False))
    _run(source.unary_kernel("negative", part, part), plane(out, True), [plane(x, True)])


def angle(x: GPUArray, out: GPUArray) -> None:
    part = part_dtype(x.dtype)
    _run(source.binary_kernel("atan2", part, part), out, [plane(x, True), plane(x, False)])


# -- elementwise ---------------------------------------------------------------------------
def unary(op: str, x: GPUArray, out: GPUArray) -> None:
    """A UNARY_OPS op of complex x (abs: into a real out)."""
    part = part_dtype(x.dtype)
    if op == "abs":  # hypot scales, so |x| neither overflows nor underflows needlessly
        _run(source.binary_kernel("hypot", part, part), out, [plane(x, False), plane(x, True)])
    elif op == "positive":
        copy(x, out)
    elif op == "logical_not":  # z == 0: the bool cast, negated
        copy(x, out)
        _run(source.unary_kernel("logical_not", dt.bool_, dt.bool_), out, [out])
    else:  # negative; round (the standard: each part rounded on its own, halves to even)
        spec = source.unary_kernel(op, part, part)
        for imag in (False, True):
            _run(spec, plane(out, imag), [plane(x, imag)])


def binary(op: str, x1: Any, x2: Any, out: GPUArray, compute: dt.DataType) -> None:
    """A BINARY_OPS op evaluated in complex `compute` (== and != into a bool out)."""
    part = part_dtype(compute)
    if op in _LOGICAL:  # on truth values: a complex operand is true when either part is
        spec = source.binary_kernel(op, dt.bool_, dt.bool_)
        _run(spec, out, [_truth(x1, out), _truth(x2, out)])
        return
    if op in ("add", "subtract"):
        spec = source.binary_kernel(op, part, part)
        for imag in (False, True):
            _run(spec, plane(out, imag), [_parts(x1, imag), _parts(x2, imag)])
        return
    # equal: both parts equal; not_equal: either part differs (NaN parts compare unequal)
    spec = source.binary_kernel(op, part, dt.bool_)
    second = GPUArray.empty(out.shape, dt.bool_, out.device)
    _run(spec, out, [_parts(x1, False), _parts(x2, False)])
    _run(spec, second, [_parts(x1, True), _parts(x2, True)])
    joined = "logical_and" if op == "equal" else "logical_or"
    _run(source.binary_kernel(joined, dt.bool_, dt.bool_), out, [out, second])


def _truth(x: Any, like: GPUArray) -> Any:
    """x as bool: a complex array through the bool cast, a real array as it is (the bool
    kernels read any dtype), a scalar as a Python bool."""
    if not isinstance(x, GPUArray):
        return bool(complex(x))
    if not x.dtype.is_complex:
        return x
    flags = GPUArray.empty(x.shape, dt.bool_, x.device)
    copy(x, flags)
    return flags


def where(cond: GPUArray, x1: Any, x2: Any, out: GPUArray) -> None:
    part = part_dtype(out.dtype)
    spec = source.where_kernel(part)
    for imag in (False, True):
        _run(spec, plane(out, imag), [cond, _parts(x1, imag), _parts(x2, imag)])


# -- reductions ----------------------------------------------------------------------------
#: reductions served for complex inputs: sum and mean part by part, the truth reductions on
#: "either part nonzero", prod by complex_math
REDUCTIONS = frozenset({"sum", "prod", "mean", "all", "any", "count_nonzero"})
_TRUTH_REDUCTIONS = frozenset({"all", "any", "count_nonzero"})


def reduction(op: str, real_kernel: Any) -> Any:
    """`real_kernel` (a cuda reduction) extended to complex data, part by part."""

    def kernel(x: GPUArray, out: GPUArray, axes: tuple[int, ...], **params: Any) -> None:
        if x._dtype.kind != "c" and out._dtype.kind != "c":
            real_kernel(x, out, axes, **params)
            return
        if op in _TRUTH_REDUCTIONS:  # on the truth values (either part nonzero)
            real_kernel(_truth(x, out), out, axes, **params)
            return
        if op == "prod":  # mixes the parts: complex_math's own kernel
            from . import complex_math

            complex_math.prod(x, out, axes)
            return
        if not out.dtype.is_complex:
            raise TypeError(f"cuda {op}: complex input needs a complex output, got {out.dtype}")
        for imag in (False, True):
            part = _parts(x, imag)
            if isinstance(part, GPUArray):
                real_kernel(part, plane(out, imag), axes, **params)
            else:  # a real input: its imaginary parts sum to zero
                provider.fill(plane(out, imag), 0.0)

    kernel.__name__ = f"cuda_{op}"
    return kernel


def scan(real_kernel: Any) -> Any:
    """The cuda cumulative_sum extended to complex data: each part summed on its own."""

    def kernel(x: GPUArray, out: GPUArray, axis: int, include_initial: bool) -> None:
        if x._dtype.kind != "c" and out._dtype.kind != "c":
            real_kernel(x, out, axis, include_initial)
            return
        if not out.dtype.is_complex:
            raise TypeError(f"cuda cumulative_sum: complex input needs a complex output, got "
                            f"{out.dtype}")  # fmt: skip
        for imag in (False, True):
            part = _parts(x, imag)
            if isinstance(part, GPUArray):
                real_kernel(part, plane(out, imag), axis, include_initial)
            else:  # a real input: its imaginary parts stay zero
                provider.fill(plane(out, imag), 0.0)

    kernel.__name__ = "cuda_cumulative_sum"
    return kernel


# -- searching, indexing and creation ----------------------------------------------------
def nonzero(real_kernel: Any) -> Any:
    """The cuda nonzero extended to complex data: an element counts where either part is
    nonzero (the bool cast of the standard)."""

    def kernel(x: GPUArray) -> Any:
        return real_kernel(_truth(x, x) if x._dtype.kind == "c" else x)

    kernel.__name__ = "cuda_nonzero"
    return kernel


def mask_assign(real_kernel: Any) -> Any:
    """The cuda mask_assign (x[mask] = value in place) extended to complex x: each part
    plane assigned from the matching part of the value (a real value's imaginary part 0)."""

    def kernel(x: GPUArray, mask: GPUArray, value: Any) -> None:
        if x._dtype.kind != "c":
            real_kernel(x, mask, value)
            return
        for imag in (False, True):
            real_kernel(plane(x, imag), mask, _parts(value, imag))

    kernel.__name__ = "cuda_mask_assign"
    return kernel


def linspace(real_kernel: Any) -> Any:
    """The cuda linspace extended to complex out: the real and imaginary parts are each
    evenly spaced between the parts of start and stop."""

    def kernel(out: GPUArray, start: Any, stop: Any, step: Any, endpoint: bool) -> None:
        if out._dtype.kind != "c":
            real_kernel(out, start, stop, step, endpoint)
            return
        a, b, s = complex(start), complex(stop), complex(step)
        real_kernel(plane(out, False), a.real, b.real, s.real, endpoint)
        real_kernel(plane(out, True), a.imag, b.imag, s.imag, endpoint)

    kernel.__name__ = "cuda_linspace"
    return kernel
