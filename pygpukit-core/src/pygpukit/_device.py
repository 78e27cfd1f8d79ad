"""Devices: what a plugin must provide so arrays can live on its hardware."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True, slots=True)
class Device:
    """A place arrays live: a device type ("cpu", "cuda", ...) and an index."""

    type: str
    index: int = 0

    def __str__(self) -> str:
        if self.type == "cpu" and self.index == 0:
            return "cpu"  # the one CPU device goes by its plain name
        return f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"

    @staticmethod
    def parse(spec: str | Device) -> Device:
        """`"cuda:1"` -> Device("cuda", 1); `"cpu"` -> Device("cpu", 0)."""
        if isinstance(spec, Device):
            return spec
        found = _parsed.get(spec) if isinstance(spec, str) else None
        if found is not None:
            return found
        if not isinstance(spec, str) or not spec:
            raise TypeError(f"a device is a string like 'cpu' or 'cuda:0', not {spec!r}")
        kind, _, index = spec.partition(":")
        if index and not index.isdigit():
            raise ValueError(f"bad device index in {spec!r}: expected e.g. 'cuda:0'")
        device = Device(kind, int(index) if index else 0)
        if len(_parsed) < 256:
            # one object per name, so arrays made from the same name share their device
            # and the ops' same-device check is an identity test
            _parsed[spec] = device
        return device


_parsed: dict[str, Device] = {}


class Buffer(Protocol):
    """A block of device memory. Freed (returned to its pool) when garbage collected."""

    @property
    def nbytes(self) -> int: ...

    @property
    def ptr(self) -> int: ...


class DeviceBackend(ABC):
    """Memory and synchronization of one device type, contributed by a plugin.

    A plugin hands an instance to the `pygpukit_register_devices` hook. Arrays on its
    devices get their memory from `allocate` and move to and from the host only through
    `upload`/`download`; kernels come separately, from kernel providers.
    """

    #: the device type this backend serves ("cpu", "cuda", ...)
    type: str
    #: preference when PyGPUkit picks a default device: the highest available wins
    priority: int = 0

    @abstractmethod
    def devices(self) -> list[Device]:
        """The devices present now (empty when the hardware or driver is missing)."""

    def status(self) -> str:
        """One line saying why `devices()` is empty, or what was found."""
        found = self.devices()
        return f"{len(found)} device(s)" if found else "no device found"

    @abstractmethod
    def allocate(self, device: Device, nbytes: int) -> Buffer:
        """A buffer of at least `nbytes` bytes (uninitialised) from the device's pool."""

    @abstractmethod
    def upload(self, buffer: Buffer, offset: int, host: np.ndarray) -> None:
        """Copy the C-contiguous host array's bytes into `buffer` at byte `offset`."""

    @abstractmethod
    def download(self, buffer: Buffer, offset: int, out: np.ndarray) -> None:
        """Fill the C-contiguous host array `out` from `buffer` starting at byte `offset`."""

    def synchronize(self, device: Device) -> None:
        """Wait until all work queued on `device` has finished."""

    def memory_stats(self, device: Device) -> dict[str, Any]:
        """The device pool's counters (used, cached, peak, ...)."""
        return {}

    def free_cached(self, device: Device) -> int:
        """Give cached blocks back to the device; returns the bytes released."""
        return 0

    def info(self, device: Device) -> dict[str, Any]:
        """Facts about the device for `get_device_info` and `python -m pygpukit info`."""
        return {"name": str(device)}
