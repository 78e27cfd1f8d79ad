"""The conformance catalog: for each op, how to build random inputs and its NumPy reference.

An `OpSpec` names the kernel (as in ``KernelProvider.kernels``), the dtypes worth testing,
and a `cases` function that, given a random generator, a dtype and a device, returns
`Case`s: a public call (made with ``backend=NAME``), the NumPy result it must match, and
optionally a direct kernel call that writes into a poisoned output.

Extension point: families are built by the ``*_specs`` functions at the bottom and
collected by `catalog()`. Add a family by writing a function that returns specs and
listing it in `_FAMILIES`; a spec whose public function does not exist yet is left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import pygpukit as gp

from ... import _dtypes as dt
from ..._array import GPUArray
from ..._device import Device
from ..._dtypes import DataType
from ..._ops.elementwise import UNARY, binary_dtypes, unary_out_dtype
from .._strategies import random_numpy

Domain = Callable[[DataType], tuple[float, float]]
#: a direct kernel call: (kernel fn, poisoned output) -> None
Direct = Callable[[Callable[..., Any], GPUArray], None]


@dataclass
class Case:
    """One call of an op, with its expected result.

    `run` returns one GPUArray, or a tuple of them for ops with several outputs (then
    `expected` is a tuple of NumPy arrays and `parts` gives each output's dtype).
    """

    label: str
    run: Callable[[str], Any]
    expected: Any
    dtype: DataType
    direct: Direct | None = None
    #: whether `direct` may be handed a strided (non-contiguous) output
    strided_out: bool = False
    #: tolerance kind when it differs from the spec's (casts to float in `copy`)
    op_kind: str | None = None
    #: what `direct` must write when it differs from `expected` (a reduction's keepdims shape)
    direct_expected: np.ndarray | None = None
    #: a comparison replacing `assert_allclose`: (actual, expected, message) -> None
    check: Callable[[GPUArray, np.ndarray, str], None] | None = None
    #: dtypes besides the tested one that the kernel must declare (indices, mixed inputs)
    needs: tuple[DataType, ...] = ()
    #: the dtype of each output when `run` returns a tuple
    parts: tuple[DataType, ...] = ()

    @property
    def out_expected(self) -> np.ndarray:
        """What a direct kernel call must write into its (poisoned) output."""
        return self.expected if self.direct_expected is None else self.direct_expected


@dataclass(frozen=True)
class OpSpec:
    """How to test one op: its kernel name, dtypes and cases."""

    name: str
    family: str
    dtypes: tuple[DataType, ...]
    cases: Callable[[np.random.Generator, DataType, Device], list[Case]]
    op_kind: str = "elementwise"
    #: test id (defaults to the kernel name; differs when one kernel has several specs)
    label: str = ""
    extra_kernels: tuple[str, ...] = field(default=())
    #: the public function the cases call (defaults to the kernel name); a spec whose
    #: function this PyGPUkit lacks is left out of the catalog
    function: str = ""

    @property
    def id(self) -> str:
        return self.label or self.name

    @property
    def public(self) -> str:
        return self.function or self.name


#: builds the cases of one op for (random generator, dtype, device)
CasesFn = Callable[[np.random.Generator, DataType, Device], list["Case"]]


# -- inputs --------------------------------------------------------------------------
def float_domain(lo: float, hi: float) -> Domain:
    """Floats in [lo, hi]; integers in the whole numbers of that range (within the defaults)."""

    def domain(d: DataType) -> tuple[float, float]:
        if d.is_inexact:  # complex: both parts
            return (lo, hi)
        if d.kind == "b":
            return (0, 1)
        dlo, dhi = (0, 15) if d.kind == "u" else (-11, 11)
        return (max(math.ceil(lo), dlo), max(min(math.floor(hi), dhi), max(math.ceil(lo), dlo)))

    return domain


DEFAULT = float_domain(-5.0, 5.0)
TIES = float_domain(-3.0, 3.0)  # see `_ties`: whole numbers, so comparisons see equal pairs
NONZERO = "nonzero"


def _draw(
    rng: np.random.Generator, shape: tuple[int, ...], d: DataType, domain: Domain | str
) -> np.ndarray:
    if domain == NONZERO:  # divisors: magnitude from the positive part, random sign
        lo, hi = (0.5, 5.0) if d.is_inexact else (1, 11)
        mag = random_numpy(rng, shape, d, (lo, hi if d.kind != "u" else 15))
        if d.kind in "ifc":
            mag = np.where(rng.random(shape) < 0.5, -mag, mag).astype(mag.dtype)
        return mag
    assert callable(domain)
    values = random_numpy(rng, shape, d, domain(d))
    if domain is TIES and d.is_inexact:
        wide = np.complex128 if d.is_complex else np.float64
        values = np.round(values.astype(wide)).astype(values.dtype)
    return values


@dataclass(frozen=True)
class Layout:
    """A view to test: a parent shape and what to do to it (slice, transpose, broadcast)."""

    label: str
    parent: tuple[int, ...]
    key: Any = ()
    transpose: bool = False
    broadcast: tuple[int, ...] | None = None

    def apply(self, x: Any) -> Any:
        y = x[self.key] if self.key != () else x
        if self.transpose:
            y = np.swapaxes(y, -1, -2) if isinstance(y, np.ndarray) else y.mT
        if self.broadcast is not None:
            y = (
                np.broadcast_to(y, self.broadcast)
                if isinstance(y, np.ndarray)
                else (y.broadcast_to(self.broadcast))
            )
        return y


UNARY_LAYOUTS = (
    Layout("contiguous", (3, 4)),
    Layout("0-d", ()),
    Layout("size-0", (0, 3)),
    Layout("size-1", (1,)),
    Layout("transposed", (4, 3), transpose=True),
    Layout("reversed-stepped", (5, 6), key=(slice(None, None, -1), slice(None, None, -2))),
    Layout("offset", (4, 5), key=(slice(1, 4), slice(2, None))),
    Layout("broadcast", (1, 4), broadcast=(3, 4)),
)

# (layout of x1, layout of x2): same shapes, broadcasting, views on both sides
BINARY_LAYOUTS = (
    (Layout("contiguous", (3, 4)), Layout("contiguous", (3, 4))),
    (Layout("0-d", ()), Layout("0-d", ())),
    (Layout("size-0", (0, 3)), Layout("row", (3,))),
    (Layout("column", (3, 1)), Layout("row", (4,))),
    (Layout("0-d", ()), Layout("3-d", (2, 3, 2))),
    (Layout("transposed", (4, 3), transpose=True),
     Layout("reversed", (3, 4), key=(slice(None, None, -1),))),
    (Layout("broadcast", (1, 4), broadcast=(3, 4)),
     Layout("offset", (4, 5), key=(slice(1, 4), slice(1, None)))),
)  # fmt: skip


def _to_device(host: np.ndarray, layout: Layout, device: Device) -> tuple[GPUArray, np.ndarray]:
    g = GPUArray.from_numpy(host, device)
    return layout.apply(g), layout.apply(host)


def _np(d: DataType) -> np.dtype[Any]:
    return d.to_numpy_dtype()


def _math(d: DataType) -> np.dtype[Any]:
    """Half types are computed in float32, as GPUs and the NumPy reference both do."""
    return np.dtype(np.float32) if d in (dt.float16, dt.bfloat16) else _np(d)


def _fake(d: DataType) -> GPUArray:
    """A shape-only stand-in array for asking the op layer which dtypes an op accepts."""
    return GPUArray(None, (), d, Device("cpu"))  # type: ignore[arg-type]


# -- elementwise ---------------------------------------------------------------------
Ref = Callable[..., Any]


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


UNARY_REF: dict[str, tuple[Ref, Domain, str, bool]] = {
    # op: (NumPy reference, input domain, tolerance kind, exact in the input's own dtype)
    "abs": (np.abs, DEFAULT, "exact", True),
    "negative": (np.negative, DEFAULT, "exact", True),
    "positive": (np.positive, DEFAULT, "exact", True),
    "square": (np.square, DEFAULT, "elementwise", False),
    "sign": (np.sign, DEFAULT, "exact", True),
    "ceil": (np.ceil, DEFAULT, "exact", True),
    "floor": (np.floor, DEFAULT, "exact", True),
    "trunc": (np.trunc, DEFAULT, "exact", True),
    "round": (np.rint, DEFAULT, "exact", True),
    "relu": (lambda x: np.maximum(x, 0).astype(x.dtype), DEFAULT, "exact", True),
    "sqrt": (np.sqrt, float_domain(0.1, 10.0), "elementwise", False),
    "rsqrt": (lambda x: 1 / np.sqrt(x), float_domain(0.1, 10.0), "transcendental", False),
    "exp": (np.exp, DEFAULT, "transcendental", False),
    "expm1": (np.expm1, DEFAULT, "transcendental", False),
    "log": (np.log, float_domain(0.1, 10.0), "transcendental", False),
    "log1p": (np.log1p, float_domain(-0.5, 10.0), "transcendental", False),
    "log2": (np.log2, float_domain(0.1, 10.0), "transcendental", False),
    "log10": (np.log10, float_domain(0.1, 10.0), "transcendental", False),
    "sin": (np.sin, DEFAULT, "transcendental", False),
    "cos": (np.cos, DEFAULT, "transcendental", False),
    "tan": (np.tan, float_domain(-1.3, 1.3), "transcendental", False),
    "asin": (np.arcsin, float_domain(-0.9, 0.9), "transcendental", False),
    "acos": (np.arccos, float_domain(-0.9, 0.9), "transcendental", False),
    "atan": (np.arctan, DEFAULT, "transcendental", False),
    "sinh": (np.sinh, DEFAULT, "transcendental", False),
    "cosh": (np.cosh, DEFAULT, "transcendental", False),
    "tanh": (np.tanh, DEFAULT, "transcendental", False),
    "asinh": (np.arcsinh, DEFAULT, "transcendental", False),
    "acosh": (np.arccosh, float_domain(1.1, 10.0), "transcendental", False),
    "atanh": (np.arctanh, float_domain(-0.9, 0.9), "transcendental", False),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), DEFAULT, "transcendental", False),
    "silu": (lambda x: x / (1 + np.exp(-x)), DEFAULT, "transcendental", False),
    "isfinite": (np.isfinite, DEFAULT, "exact", True),
    "isinf": (np.isinf, DEFAULT, "exact", True),
    "isnan": (np.isnan, DEFAULT, "exact", True),
    "signbit": (np.signbit, DEFAULT, "exact", True),
    "logical_not": (np.logical_not, TIES, "exact", True),
    "bitwise_invert": (np.invert, DEFAULT, "exact", True),
}
GELU_REF: dict[str, Ref] = {
    "none": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
}
#: ops whose inputs get NaN, +-inf and -0.0 mixed in
_SPECIALS = {"isfinite", "isinf", "isnan", "signbit", "abs", "negative", "sign"}


#: the special values mixed into complex inputs: NaN and infinite parts, on either side
_COMPLEX_SPECIALS = (complex(np.nan, 1.0), complex(1.0, np.inf), complex(-np.inf, 0.0), -0.0j)


def _with_specials(rng: np.random.Generator, host: np.ndarray) -> np.ndarray:
    if host.dtype.kind not in "fVc" or host.size == 0:  # ml_dtypes report kind "V"
        return host
    flat = host.reshape(-1).copy()
    picks = rng.integers(0, flat.size, size=min(4, flat.size))
    specials = _COMPLEX_SPECIALS if host.dtype.kind == "c" else (np.nan, np.inf, -np.inf, -0.0)
    for i, v in zip(picks, specials, strict=False):
        flat[i] = v
    return flat.reshape(host.shape)


def _reference(
    ref: Ref, inputs: Sequence[Any], compute: DataType, out: DataType, exact: bool
) -> np.ndarray:
    """The NumPy result: exact ops in the compute dtype, float ops in float64 (complex128
    for complex inputs)."""
    if exact or not out.is_inexact:
        args = [np.asarray(a).astype(_np(compute)).astype(_math(compute)) for a in inputs]
        with np.errstate(all="ignore"):
            return np.asarray(ref(*args)).astype(_np(out))
    wide = np.complex128 if compute.is_complex else np.float64
    args = [np.asarray(a).astype(_np(compute)).astype(wide) for a in inputs]
    with np.errstate(all="ignore"):
        return np.asarray(ref(*args)).astype(np.complex128 if out.is_complex else np.float64)


def _unary_cases(op: str, ref: Ref, domain: Domain, exact: bool, params: dict[str, Any]) -> CasesFn:
    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        out_dtype = unary_out_dtype(op, d)
        keeps = UNARY[op][0] in ("keep", "float") and not d.is_complex
        compute = out_dtype if keeps else d
        # |z| and z / |z| of complex z are roundings of a square root, not exact
        rounded = d.is_complex and op in ("abs", "sign")
        kind = "transcendental" if rounded else None
        exact_here = exact and not rounded
        fn = getattr(gp, op)
        result = []
        for layout in UNARY_LAYOUTS:
            host = _draw(rng, layout.parent, d, domain)
            if op in _SPECIALS:
                host = _with_specials(rng, host)
            g, h = _to_device(host, layout, device)
            expected = _reference(lambda x: ref(x), [h], compute, out_dtype, exact_here)

            def run(name: str, g: GPUArray = g) -> GPUArray:
                return fn(g, backend=name, **params)

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g) -> None:
                kernel(g, out, **params)

            result.append(Case(layout.label, run, expected, out_dtype, direct, strided_out=True,
                               op_kind=kind))  # fmt: skip
        return result

    return cases


def _accepted_unary(op: str) -> tuple[DataType, ...]:
    ok = []
    for d in dt.EVERY_DTYPE:
        try:
            unary_out_dtype(op, d)
        except TypeError:
            continue
        ok.append(d)
    return tuple(ok)


def unary_specs() -> list[OpSpec]:
    specs = []
    for op, (ref, domain, kind, exact) in UNARY_REF.items():
        specs.append(
            OpSpec(op, "unary", _accepted_unary(op), _unary_cases(op, ref, domain, exact, {}), kind)
        )
    for approx, ref in GELU_REF.items():
        cases = _unary_cases("gelu", ref, DEFAULT, False, {"approximate": approx})
        specs.append(OpSpec("gelu", "unary", _accepted_unary("gelu"), cases, "transcendental",
                            label=f"gelu-{approx}"))  # fmt: skip
    return specs


BINARY_REF: dict[str, tuple[Ref, Domain | str, Domain | str, str, bool]] = {
    # op: (NumPy reference, domain of x1, domain of x2, tolerance kind, exact in compute dtype)
    "add": (np.add, DEFAULT, DEFAULT, "elementwise", False),
    "subtract": (np.subtract, DEFAULT, DEFAULT, "elementwise", False),
    "multiply": (np.multiply, DEFAULT, DEFAULT, "elementwise", False),
    "divide": (np.divide, DEFAULT, NONZERO, "elementwise", False),
    "floor_divide": (np.floor_divide, DEFAULT, NONZERO, "elementwise", True),
    "remainder": (np.remainder, DEFAULT, NONZERO, "elementwise", True),
    "pow": (np.power, float_domain(0.5, 3.0), float_domain(0.0, 3.0), "transcendental", False),
    "maximum": (np.maximum, DEFAULT, DEFAULT, "exact", True),
    "minimum": (np.minimum, DEFAULT, DEFAULT, "exact", True),
    "atan2": (np.arctan2, DEFAULT, DEFAULT, "transcendental", False),
    "hypot": (np.hypot, DEFAULT, DEFAULT, "transcendental", False),
    "logaddexp": (np.logaddexp, DEFAULT, DEFAULT, "transcendental", False),
    "copysign": (np.copysign, DEFAULT, DEFAULT, "exact", False),
    "equal": (np.equal, TIES, TIES, "exact", True),
    "not_equal": (np.not_equal, TIES, TIES, "exact", True),
    "less": (np.less, TIES, TIES, "exact", True),
    "less_equal": (np.less_equal, TIES, TIES, "exact", True),
    "greater": (np.greater, TIES, TIES, "exact", True),
    "greater_equal": (np.greater_equal, TIES, TIES, "exact", True),
    "logical_and": (np.logical_and, TIES, TIES, "exact", True),
    "logical_or": (np.logical_or, TIES, TIES, "exact", True),
    "logical_xor": (np.logical_xor, TIES, TIES, "exact", True),
    "bitwise_and": (np.bitwise_and, DEFAULT, DEFAULT, "exact", True),
    "bitwise_or": (np.bitwise_or, DEFAULT, DEFAULT, "exact", True),
    "bitwise_xor": (np.bitwise_xor, DEFAULT, DEFAULT, "exact", True),
    "bitwise_left_shift": (np.left_shift, DEFAULT, float_domain(0, 3), "exact", True),
    "bitwise_right_shift": (np.right_shift, DEFAULT, float_domain(0, 3), "exact", True),
}

#: the second dtype of each dtype's mixed-dtype case (exercises promotion in kernels)
PARTNER = {
    dt.bool_: dt.int8, dt.int8: dt.uint8, dt.uint8: dt.int8, dt.int16: dt.uint8,
    dt.int32: dt.int16, dt.int64: dt.uint8, dt.float16: dt.bfloat16, dt.bfloat16: dt.float32,
    dt.float32: dt.int32, dt.float64: dt.float16, dt.complex64: dt.float64,
    dt.complex128: dt.complex64,
}  # fmt: skip


def _binary_ok(op: str, a: Any, b: Any) -> bool:
    try:
        binary_dtypes(op, a, b)
    except (TypeError, OverflowError):
        return False
    return True


def _scalar(
    rng: np.random.Generator, d: DataType, domain: Domain | str
) -> bool | int | float | complex:
    value = _draw(rng, (), d, domain).item()
    if d.kind == "b":
        return bool(value)
    if d.is_complex:
        return complex(value)
    return int(value) if d.is_integer else float(value)


def _binary_cases(
    op: str, ref: Ref, dom1: Domain | str, dom2: Domain | str, exact: bool
) -> CasesFn:
    fn = getattr(gp, op)

    def case(label: str, x1: Any, x2: Any, h1: Any, h2: Any) -> Case:
        compute, out_dtype = binary_dtypes(op, x1, x2)
        expected = _reference(ref, [h1, h2], compute, out_dtype, exact)
        shape = expected.shape

        def run(name: str) -> GPUArray:
            return fn(x1, x2, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray) -> None:
            a = x1.broadcast_to(shape) if isinstance(x1, GPUArray) else x1
            b = x2.broadcast_to(shape) if isinstance(x2, GPUArray) else x2
            kernel(a, b, out, compute)

        return Case(label, run, expected, out_dtype, direct, strided_out=True)

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        result = []
        for l1, l2 in BINARY_LAYOUTS:
            g1, h1 = _to_device(_draw(rng, l1.parent, d, dom1), l1, device)
            g2, h2 = _to_device(_draw(rng, l2.parent, d, dom2), l2, device)
            result.append(case(f"{l1.label} with {l2.label}", g1, g2, h1, h2))
        g1, h1 = _to_device(_draw(rng, (3, 4), d, dom1), UNARY_LAYOUTS[0], device)
        s = _scalar(rng, d, dom2)
        if _binary_ok(op, g1, s):
            result.append(case("array with Python scalar", g1, s, h1, np.asarray(s)))
        s = _scalar(rng, d, dom1)
        g2, h2 = _to_device(_draw(rng, (3, 4), d, dom2), UNARY_LAYOUTS[0], device)
        if _binary_ok(op, s, g2):
            result.append(case("Python scalar with array", s, g2, np.asarray(s), h2))
        partner = PARTNER.get(d)
        if partner is not None and _binary_ok(op, _fake(d), _fake(partner)):
            g2, h2 = _to_device(_draw(rng, (3, 4), partner, dom2), UNARY_LAYOUTS[0], device)
            mixed = case(f"mixed with {partner.name}", g1, g2, h1, h2)
            mixed.needs = (partner,)
            result.append(mixed)
        return result

    return cases


def binary_specs() -> list[OpSpec]:
    specs = []
    for op, (ref, dom1, dom2, kind, exact) in BINARY_REF.items():
        dtypes = tuple(d for d in dt.EVERY_DTYPE if _binary_ok(op, _fake(d), _fake(d)))
        specs.append(OpSpec(op, "binary", dtypes, _binary_cases(op, ref, dom1, dom2, exact), kind))
    return specs


def _where_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    layouts = (
        ("same shapes, x2 transposed", (3, 4), (3, 4), (4, 3)),
        ("broadcast", (3, 1), (4,), ()),
        ("size-0", (0, 2), (2,), (2, 0)),
    )
    for label, c_shape, s1, s2_parent in layouts:
        c_host = rng.random(c_shape) < 0.5
        h1 = random_numpy(rng, s1, d)
        h2_parent = random_numpy(rng, s2_parent, d)
        h2 = h2_parent.T
        c = GPUArray.from_numpy(c_host, device)
        g1 = GPUArray.from_numpy(h1, device)
        g2 = GPUArray.from_numpy(h2_parent, device).transpose()
        expected = np.where(c_host, h1, h2).astype(_np(d))
        shape = expected.shape

        def run(name: str, c: GPUArray = c, g1: GPUArray = g1, g2: GPUArray = g2) -> GPUArray:
            return gp.where(c, g1, g2, backend=name)

        def direct(
            kernel: Callable[..., Any], out: GPUArray, c: GPUArray = c, g1: GPUArray = g1,
            g2: GPUArray = g2, shape: tuple[int, ...] = shape,
        ) -> None:  # fmt: skip
            kernel(c.broadcast_to(shape), g1.broadcast_to(shape), g2.broadcast_to(shape), out)

        result.append(Case(label, run, expected, d, direct, strided_out=True))
    return result


def where_specs() -> list[OpSpec]:
    return [OpSpec("where", "where", dt.EVERY_DTYPE, _where_cases, "exact")]


# -- creation and copies -------------------------------------------------------------
def _copy_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for layout in UNARY_LAYOUTS:
        g, h = _to_device(random_numpy(rng, layout.parent, d), layout, device)

        def run(name: str, g: GPUArray = g) -> GPUArray:
            return gp.copy(g, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g) -> None:
            kernel(g, out)

        result.append(Case(layout.label, run, np.array(h), d, direct, strided_out=True))
    for target in dt.EVERY_DTYPE:  # casts, from a strided source
        if target is d or (d.is_complex and not target.is_complex and target.kind != "b"):
            continue  # complex -> real is refused (tests/core check the error)
        bounds = (0, 15) if target.kind == "u" or d.kind == "u" else None
        host = random_numpy(rng, (5, 6), d, bounds)[::-1, ::2]
        g = GPUArray.from_numpy(np.ascontiguousarray(host[::-1]), device)[::-1]
        expected = (
            host.astype(np.float32).astype(_np(target))
            if (d.is_floating and target.is_floating)
            else host.astype(_np(target))
        )

        def run_cast(name: str, g: GPUArray = g, target: DataType = target) -> GPUArray:
            return gp.astype(g, target, backend=name)

        def direct_cast(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g) -> None:
            kernel(g, out)

        kind = "elementwise" if target.is_inexact else "exact"
        result.append(
            Case(
                f"astype {target.name}",
                run_cast,
                expected,
                target,
                direct_cast,
                op_kind=kind,
                needs=(target,),
            )
        )
    return result


def _fill_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for shape in ((3, 4), (), (0,), (1,)):
        value = _scalar(rng, d, DEFAULT) if not d.is_float8 else 1.5
        expected = np.full(shape, value, dtype=_np(d))

        def run(name: str, shape: tuple[int, ...] = shape, value: Any = value) -> GPUArray:
            return gp.full(shape, value, dtype=d, device=device, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, value: Any = value) -> None:
            if out.size:
                kernel(out, value)

        result.append(Case(f"shape {shape}", run, expected, d, direct, strided_out=True))
    return result


def _arange_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    if d.is_integer:
        args: list[tuple[float, float, float]] = [(0, 10, 1), (9, 1, -2), (2, 11, 3), (3, 3, 1)]
    else:
        args = [(0.5, 3.0, 0.25), (2.0, -2.0, -0.5), (0.0, 1.0, 0.1), (1.0, 1.0, 1.0)]
    result = []
    for start, stop, step in args:
        n = max(0, math.ceil((stop - start) / step))
        expected = (start + np.arange(n, dtype=np.float64) * step).astype(_np(d))

        def run(name: str, a: tuple[float, float, float] = (start, stop, step)) -> GPUArray:
            return gp.arange(*a, dtype=d, device=device, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, start: Any = start,
                   step: Any = step) -> None:  # fmt: skip
            if out.size:
                kernel(out, start, step)

        result.append(Case(f"arange{(start, stop, step)}", run, expected, d, direct))
    return result


def _linspace_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for start, stop, num, endpoint in ((0.0, 1.0, 5, True), (-2.0, 3.0, 7, False),
                                       (1.0, 4.0, 1, True), (0.0, 1.0, 0, True)):  # fmt: skip
        expected = np.linspace(start, stop, num, endpoint=endpoint).astype(_np(d))

        def run(name: str, a: tuple[Any, ...] = (start, stop, num, endpoint)) -> GPUArray:
            return gp.linspace(a[0], a[1], a[2], endpoint=a[3], dtype=d, device=device,
                               backend=name)  # fmt: skip

        def direct(kernel: Callable[..., Any], out: GPUArray,
                   a: tuple[Any, ...] = (start, stop, num, endpoint)) -> None:  # fmt: skip
            if out.size:
                div = (a[2] - 1) if a[3] else a[2]
                kernel(out, a[0], a[1], (a[1] - a[0]) / div if div else 0.0, a[3])

        result.append(Case(f"linspace{(start, stop, num, endpoint)}", run, expected, d, direct))
    return result


def _eye_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for rows, cols, k in ((3, 3, 0), (2, 4, 1), (4, 2, -1), (3, 3, 5), (0, 2, 0)):
        expected = np.eye(rows, cols, k).astype(_np(d))

        def run(name: str, a: tuple[int, int, int] = (rows, cols, k)) -> GPUArray:
            return gp.eye(a[0], a[1], k=a[2], dtype=d, device=device, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, k: int = k) -> None:
            if out.size:
                kernel(out, k)

        result.append(Case(f"eye({rows}, {cols}, k={k})", run, expected, d, direct))
    return result


def _triangle_cases(op: str) -> Callable[[np.random.Generator, DataType, Device], list[Case]]:
    ref = np.tril if op == "tril" else np.triu
    fn = getattr(gp, op)

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        result = []
        for layout, k in ((Layout("square", (4, 4)), 0), (Layout("wide", (3, 5)), 1),
                          (Layout("batched transposed", (2, 5, 3), transpose=True), -1),
                          (Layout("size-0", (0, 3)), 0)):  # fmt: skip
            g, h = _to_device(random_numpy(rng, layout.parent, d), layout, device)
            expected = ref(h, k)

            def run(name: str, g: GPUArray = g, k: int = k) -> GPUArray:
                return fn(g, k=k, backend=name)

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g,
                       k: int = k) -> None:  # fmt: skip
                if out.size:
                    kernel(g, out, k)

            result.append(Case(f"{layout.label} k={k}", run, expected, d, direct))
        return result

    return cases


def creation_specs() -> list[OpSpec]:
    floats = (*dt.FLOAT_DTYPES,)
    every = dt.EVERY_DTYPE
    return [
        OpSpec("copy", "copy", every, _copy_cases, "exact"),
        OpSpec("fill", "creation", every, _fill_cases, "exact", function="full"),
        OpSpec("arange", "creation", (*dt.INTEGER_DTYPES, *floats), _arange_cases),
        OpSpec("linspace", "creation", (*floats, *dt.COMPLEX_DTYPES), _linspace_cases),
        OpSpec("eye", "creation", every, _eye_cases, "exact"),
        OpSpec("tril", "creation", every, _triangle_cases("tril"), "exact"),
        OpSpec("triu", "creation", every, _triangle_cases("triu"), "exact"),
    ]


# -- the catalog ---------------------------------------------------------------------
_FAMILIES: list[Callable[[], list[OpSpec]]] = [
    unary_specs, binary_specs, where_specs, creation_specs,
]  # fmt: skip


def register_family(build: Callable[[], list[OpSpec]]) -> None:
    """Add a family of specs (e.g. from a package that adds ops) to the catalog."""
    if build not in _FAMILIES:
        _FAMILIES.append(build)


def _load_builtin_families() -> None:
    """Register the families of `families/` (imported late: they build on this module)."""
    from .families import BUILTIN

    for build in BUILTIN:
        register_family(build)


def catalog() -> list[OpSpec]:
    """Every spec of every family whose public function exists in this PyGPUkit, and
    those of the ops plugins registered with a reference (they bring their own call)."""
    _load_builtin_families()
    specs: list[OpSpec] = []
    for build in _FAMILIES:
        specs += build()
    return [s for s in specs if s.family == "plugin" or _has_public(s.public)]


def _has_public(name: str) -> bool:
    """Whether `name` (``"add"``, or dotted into an extension: ``"linalg.solve"``) exists."""
    where: Any = gp
    for part in name.split("."):
        if not hasattr(where, part):
            return False
        where = getattr(where, part)
    return True
