"""`__array_namespace_info__()`: what this namespace supports, per the Array API."""

from __future__ import annotations

from typing import Any

from . import _dtypes as dt
from ._device import Device
from ._dtypes import DataType


class Info:
    """Capabilities, devices and dtypes of PyGPUkit (the Array API inspection object)."""

    __slots__ = ()

    def capabilities(self) -> dict[str, bool]:
        """Optional features: boolean indexing and data-dependent output shapes."""
        return {"boolean indexing": True, "data-dependent shapes": True}

    def default_device(self) -> Device:
        """The device new arrays go to when none is given."""
        from ._placement import default_device

        return default_device()

    def devices(self) -> list[Device]:
        """Every device present now, of every installed device type."""
        from ._plugins import registry

        found: list[Device] = []
        for backend in registry().devices.values():
            found.extend(backend.devices())
        return found

    def default_dtypes(self, *, device: Any = None) -> dict[str, DataType]:
        """The default dtypes (the same on every device)."""
        self._check_device(device)
        return {
            "real floating": dt.DEFAULT_FLOAT,
            "complex floating": dt.DEFAULT_COMPLEX,
            "integral": dt.DEFAULT_INT,
            "indexing": dt.INDEX_DTYPE,
        }

    def dtypes(
        self, *, device: Any = None, kind: str | tuple[str, ...] | None = None
    ) -> dict[str, DataType]:
        """The standard's dtypes PyGPUkit supports, by name, optionally only those of `kind`
        (isdtype's kinds). The extra storage types (float16, bfloat16, float8) are not
        Array API dtypes, so they are not listed here; ``gp.float16`` and friends work."""
        from ._ops.utility import isdtype

        self._check_device(device)
        return {
            d.name: d for d in dt.EVERY_DTYPE
            if d.name in _STANDARD and (kind is None or isdtype(d, kind))
        }  # fmt: skip

    def _check_device(self, device: Any) -> None:
        if device is not None:
            from ._placement import resolve_device

            resolve_device(device)  # ValueError for a device that is not present

    def __repr__(self) -> str:
        return "pygpukit.__array_namespace_info__()"


#: the Array API's real and boolean dtypes (the complex ones come with complex support)
_STANDARD = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
})  # fmt: skip


def __array_namespace_info__() -> Info:
    """The Array API inspection object for PyGPUkit."""
    return Info()
