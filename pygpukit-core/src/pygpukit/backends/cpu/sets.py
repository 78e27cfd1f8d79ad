"""CPU kernel of the set functions: one stable sort, then group boundaries."""

from __future__ import annotations

import numpy as np

from ..._array import GPUArray
from ..._dtypes import INDEX_DTYPE
from ..._providers import KernelProvider
from .statistical import WITH_COMPLEX
from .views import operand, view


def _to_device(data: np.ndarray, like: GPUArray) -> GPUArray:
    out = GPUArray.empty(data.shape, INDEX_DTYPE, like.device)
    if out.size:
        view(out)[...] = data
    return out


def unique(
    x: GPUArray, want_indices: bool, want_inverse: bool, want_counts: bool
) -> tuple[GPUArray, GPUArray | None, GPUArray | None, GPUArray | None]:
    flat = view(x).reshape(-1)
    keys = operand(x, x.dtype).reshape(-1)  # half types widened exactly, to sort
    perm = np.argsort(keys, kind="stable")
    ordered = keys[perm]
    # A group starts where the value differs from the one before; NaN != NaN, so every
    # NaN starts its own group, and -0.0 == 0.0 keeps the two zeros together.
    starts_group = np.ones(ordered.shape, dtype=bool)
    starts_group[1:] = ordered[1:] != ordered[:-1]
    starts = np.flatnonzero(starts_group)
    firsts = perm[starts]  # stable sort: each group's first element is its first occurrence

    values = GPUArray.empty(starts.shape, x.dtype, x.device)
    if values.size:
        view(values)[...] = flat[firsts]
    indices = _to_device(firsts, x) if want_indices else None
    inverse = None
    if want_inverse:
        group = np.empty(perm.shape, dtype=np.int64)
        group[perm] = np.cumsum(starts_group) - 1
        inverse = _to_device(group, x)
    counts = None
    if want_counts:
        counts = _to_device(np.diff(np.append(starts, ordered.size)), x)
    return values, indices, inverse, counts


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
    provider.add("unique", unique, WITH_COMPLEX)
