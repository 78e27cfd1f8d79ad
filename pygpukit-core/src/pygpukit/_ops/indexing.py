"""The indexing functions (being written; see the package docs for the kernel conventions)."""

from __future__ import annotations

from typing import Any

from .._array import GPUArray

__all__: list[str] = []


def getitem_advanced(x: GPUArray, key: Any) -> GPUArray:
    raise IndexError(
        f"only integers, slices, '...', None and 0-d integer arrays are valid indices, got {key!r}"
    )


def setitem_advanced(x: GPUArray, key: Any, value: Any) -> None:
    raise IndexError(
        f"only integers, slices, '...', None and 0-d integer arrays are valid indices, got {key!r}"
    )
