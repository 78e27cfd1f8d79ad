"""Strided iteration spaces: drop size-1 dimensions and merge runs that are contiguous in
every operand, so kernels walk as few dimensions as the data allows."""

from __future__ import annotations


def merge_dims(
    shape: tuple[int, ...], strides: list[tuple[int, ...]]
) -> list[tuple[int, list[int]]]:
    """[(size, [byte stride of each operand])] from outermost to innermost; at least one
    entry (a single element is one dimension of size 1)."""
    merged: list[tuple[int, list[int]]] = []
    for d, size in enumerate(shape):
        if size == 1:
            continue
        st = [s[d] for s in strides]
        if merged:
            psize, pst = merged[-1]
            if all(p == c * size for p, c in zip(pst, st, strict=True)):
                merged[-1] = (psize * size, st)
                continue
        merged.append((size, st))
    return merged or [(1, [0] * len(strides))]
