"""`pygpukit.core.device`, the seed's module path for device facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._device import Device
from ..device_info import get_device_info, is_cuda_available


@dataclass(frozen=True)
class DeviceInfo:
    """What the seed's `DeviceInfo` held: a device's name, kind and the backend's facts."""

    name: str
    type: str
    index: int
    details: dict[str, Any]

    @classmethod
    def of(cls, device: Device | str | None = None) -> DeviceInfo:
        info = dict(get_device_info(device))
        return cls(str(info.pop("name")), str(info.pop("type")), int(info.pop("index")), info)


def default_device() -> Device:
    """The device new arrays go to (the ``device`` setting, or the best one present)."""
    from .._placement import default_device as find

    return find()


__all__ = ["Device", "DeviceInfo", "default_device", "get_device_info", "is_cuda_available"]
