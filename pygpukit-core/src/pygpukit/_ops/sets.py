"""Set functions: the unique elements of an array, with indices, inverse and counts.

Kernel calling convention (the output size depends on the data, so the kernel
allocates): ``unique(x, want_indices, want_inverse, want_counts)`` returns
``(values, indices, inverse, counts)``, 1-D arrays with ``indices``, ``inverse`` and
``counts`` int64 and None where not wanted. ``inverse`` indexes ``values`` for each
element of ``x`` flattened in C order; the core reshapes it to ``x.shape``.

Semantics every backend follows:

- ``values`` are sorted ascending, and ``x`` is flattened first (any shape works);
  complex values by real part, then imaginary part (NumPy's order).
- NaN never equals NaN, so each NaN is its own unique value with count 1 (all at the
  end of ``values``), as the standard asks.
- -0.0 and 0.0 are one value; ``values`` holds whichever of them occurs first in ``x``.
- ``indices`` gives each value's first occurrence in flattened ``x``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._array import GPUArray
from ._core import kernel_on
from ._reduction import check_array

__all__ = [
    "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult", "unique_all",
    "unique_counts", "unique_inverse", "unique_values",
]  # fmt: skip


class UniqueAllResult(NamedTuple):
    """What `unique_all` returns."""

    values: GPUArray
    indices: GPUArray
    inverse_indices: GPUArray
    counts: GPUArray


class UniqueCountsResult(NamedTuple):
    """What `unique_counts` returns."""

    values: GPUArray
    counts: GPUArray


class UniqueInverseResult(NamedTuple):
    """What `unique_inverse` returns."""

    values: GPUArray
    inverse_indices: GPUArray


def _unique(
    op: str, x: Any, indices: bool, inverse: bool, counts: bool, backend: str | None
) -> tuple[Any, ...]:
    check_array(op, x, allow_complex=True)
    fn = kernel_on("unique", x.device, (x.dtype,), backend)
    values, first, inv, count = fn(x, indices, inverse, counts)
    if inv is not None:
        inv = inv.reshape(x.shape)
    return values, first, inv, count


def unique_all(x: GPUArray, /, *, backend: str | None = None) -> UniqueAllResult:
    """Sorted unique values of x, with first indices, inverse indices and counts."""
    return UniqueAllResult(*_unique("unique_all", x, True, True, True, backend))


def unique_counts(x: GPUArray, /, *, backend: str | None = None) -> UniqueCountsResult:
    """Sorted unique values of x and how often each occurs."""
    values, _, _, counts = _unique("unique_counts", x, False, False, True, backend)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: GPUArray, /, *, backend: str | None = None) -> UniqueInverseResult:
    """Sorted unique values of x and, per element of x, the index of its value."""
    values, _, inverse, _ = _unique("unique_inverse", x, False, True, False, backend)
    return UniqueInverseResult(values, inverse)


def unique_values(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """Sorted unique values of x (each NaN counts as distinct)."""
    values: GPUArray = _unique("unique_values", x, False, False, False, backend)[0]
    return values
