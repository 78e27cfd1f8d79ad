"""Where arrays go: the default device and the backend that owns a device."""

from __future__ import annotations

from . import config
from ._device import Device, DeviceBackend
from ._plugins import registry


def backend_of(device: Device) -> DeviceBackend:
    backend = registry().devices.get(device.type)
    if backend is None:
        known = ", ".join(sorted(registry().devices)) or "none"
        note = registry().not_loaded_note()
        hint = note if note else f"install its package, e.g. pygpukit-{device.type}"
        raise ValueError(
            f"no plugin provides device type {device.type!r} (known device types: {known}); {hint}"
        )
    return backend


def check_device(device: Device) -> Device:
    present = backend_of(device).devices()
    if device not in present:
        found = ", ".join(str(d) for d in present) or "none"
        raise ValueError(f"device {device} is not available (present: {found})")
    return device


def default_device() -> Device:
    """The `device` setting, or with "auto" the best device present.

    "Best" follows the `backend` priority list first (the device type of each named
    provider, in order), then each device backend's own priority.
    """
    snap = config.current()
    cached = snap.dispatch_cache.get("__default_device__")
    if cached is not None:
        return cached
    wanted = snap.get("device")
    if wanted != "auto":
        device = check_device(Device.parse(wanted))
    else:
        device = _best_present(snap.get("backend"))
    snap.dispatch_cache["__default_device__"] = device
    return device


def _best_present(order: list[str]) -> Device:
    reg = registry()
    types: list[str] = []
    for name in order:
        provider = reg.providers.get(name)
        if provider is not None and provider.device_type not in types:
            types.append(provider.device_type)
    by_priority = sorted(reg.devices.values(), key=lambda b: -b.priority)
    types += [b.type for b in by_priority if b.type not in types]
    for kind in types:
        backend = reg.devices.get(kind)
        if backend is not None:
            present = backend.devices()
            if present:
                return present[0]
    note = reg.not_loaded_note()
    if note:
        raise RuntimeError(f"no device is available, not even the CPU: {note}")
    raise RuntimeError(
        "no device is available, not even the CPU: is pygpukit-core installed with its "
        "entry points? Run `python -m pygpukit doctor`"
    )


def resolve_device(device: Device | str | None) -> Device:
    if device is None:
        return default_device()
    return check_device(Device.parse(device))
