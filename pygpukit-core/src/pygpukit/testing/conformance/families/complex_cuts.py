"""Conformance specs of the complex inverse functions where they are hard: on and beside
their branch cuts (the sign of a zero part picks the side), near +-1 and +-i, over the
whole range of magnitudes, and at every pair of special parts (NaN, +-inf, +-0), with
the signs of zero results checked against NumPy's complex128 results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import pygpukit as gp

from ...._array import GPUArray
from ...._device import Device
from ...._dtypes import COMPLEX_DTYPES, DataType
from ... import _assertions
from ..catalog import Case, OpSpec

REFERENCES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh,
}  # fmt: skip
_SPECIAL_PARTS = (0.0, -0.0, 0.5, -1.0, 1.0, 2.0, -2.0, np.inf, -np.inf, np.nan, 3e9)


def _hard_points(rng: np.random.Generator, d: DataType) -> np.ndarray:
    """Points on both axes beyond +-1 with +-0 and tiny other parts, points hugging +-1
    and +-i, and magnitudes across the dtype's range (normal numbers only)."""
    n = 24
    big = 300 if d is gp.complex128 else 30
    side = rng.choice([0.0, -0.0, 1e-30, -1e-30, 1e-9], n)
    far = (1 + 10.0 ** rng.uniform(-6, 6, n)) * rng.choice([-1.0, 1.0], n)
    hug = 1 + 10.0 ** rng.uniform(-7, -1, n) * rng.choice([-1.0, 1.0], n)
    wide = 10.0 ** rng.uniform(-big, big, (2, n)) * rng.choice([-1.0, 1.0], (2, n))
    pieces = []
    for re, im in ((far, side), (side, far), (hug, side), (side, hug), (wide[0], wide[1])):
        z = np.empty(n, np.complex128)
        z.real, z.imag = re, im
        pieces.append(z)
    return np.concatenate(pieces).astype(d.to_numpy_dtype())


def _special_points(d: DataType) -> np.ndarray:
    k = len(_SPECIAL_PARTS)
    z = np.empty(k * k, np.complex128)
    z.real, z.imag = np.repeat(_SPECIAL_PARTS, k), np.tile(_SPECIAL_PARTS, k)
    return z.astype(d.to_numpy_dtype())


def _signed_zeros(d: DataType) -> Callable[[GPUArray, np.ndarray, str], None]:
    """assert_allclose, then: where a part of the reference is a zero, the same zero."""

    def check(actual: GPUArray, expected: np.ndarray, msg: str) -> None:
        _assertions.assert_allclose(actual, expected, d, op_kind="transcendental", err_msg=msg)
        got = actual.to_numpy()
        for part in ("real", "imag"):
            g, w = getattr(got, part), getattr(expected, part)
            wrong = (w == 0) & (np.signbit(g) != np.signbit(w))
            if wrong.any():
                raise AssertionError(f"{msg}: {part} part has the wrong zero sign at "
                                     f"{np.argwhere(wrong)[:4].tolist()}")  # fmt: skip

    return check


def _cases(op: str) -> Callable[[np.random.Generator, DataType, Device], list[Case]]:
    ref = REFERENCES[op]
    fn = getattr(gp, op)

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        out = []
        for label, host in (("branch cuts and magnitudes", _hard_points(rng, d)),
                            ("special parts", _special_points(d))):  # fmt: skip
            with np.errstate(all="ignore"):
                want = ref(host.astype(np.complex128))
            g = GPUArray.from_numpy(host, device)

            def run(name: str, g: GPUArray = g) -> Any:
                return fn(g, backend=name)

            def direct(kernel: Callable[..., Any], result: GPUArray, g: GPUArray = g) -> None:
                kernel(g, result)

            out.append(Case(label, run, want, d, direct, strided_out=True,
                            check=_signed_zeros(d)))  # fmt: skip
        return out

    return cases


def specs() -> list[OpSpec]:
    return [
        OpSpec(op, "complex", COMPLEX_DTYPES, _cases(op), "transcendental", label=f"{op}-cuts")
        for op in REFERENCES
    ]
