"""Plugins: see what is installed, and add or remove plugins at run time.

Using plugins
-------------
``pygpukit.plugins.list()`` says what was found and what happened to each plugin (loaded,
failed with its error, disabled by ``PYGPUKIT_DISABLE_PLUGINS``, or not allowed by the
``PYGPUKIT_PLUGINS`` allow-list). ``providers()`` and ``devices()`` show what the loaded
plugins contributed. ``register(obj, name)`` adds an in-process plugin (tests, notebooks)
and ``unregister(name)`` removes it; both take effect at the next op call, because every
cached dispatch choice is dropped. ``reload()`` forgets everything and reads the entry
points again, e.g. after changing the allow or deny list.

Writing a plugin
----------------
A plugin is a module (or any object) with functions marked ``@pygpukit.hookimpl`` whose
names and arguments are those of :mod:`pygpukit.hookspecs`. It is found through the
entry-point group ``pygpukit`` of its distribution. A complete one that adds a kernel
provider for arrays in host memory, serving ``add`` for float32 only::

    # pyproject.toml
    [build-system]
    requires = ["setuptools>=61"]
    build-backend = "setuptools.build_meta"

    [project]
    name = "pygpukit-fastadd"
    version = "0.1.0"
    dependencies = ["pygpukit-core", "numpy"]

    [project.entry-points.pygpukit]
    fastadd = "pygpukit_fastadd"

    # src/pygpukit_fastadd/__init__.py
    import numpy as np

    import pygpukit as gp
    from pygpukit.backends.cpu.views import view   # NumPy view of a CPU array

    provider = gp.KernelProvider("fastadd", device_type="cpu", priority=-1)

    @provider.kernel("add", dtypes=["float32"])
    def add(x1, x2, out, compute):
        # binary kernels get the operands already broadcast to out's shape
        a = view(x1) if isinstance(x1, gp.GPUArray) else x1
        b = view(x2) if isinstance(x2, gp.GPUArray) else x2
        np.add(a, b, out=view(out))

    @gp.hookimpl
    def pygpukit_register_kernels(register):
        register(provider)

    @gp.hookimpl
    def pygpukit_diagnose(report):
        report("fastadd", True, "NumPy add, float32 only")

After ``pip install .`` it is loaded on first use; ``gp.add(x, y, backend="fastadd")``
or ``PYGPUKIT_BACKEND=fastadd,cpu`` selects it, and ``gp.explain("add", x, y)`` says
whether it was chosen. A plugin for new hardware also implements
``pygpukit_register_devices`` with a :class:`pygpukit.DeviceBackend` subclass (its
``type``, ``devices()``, ``allocate``, ``upload`` and ``download``), and registers a
provider whose ``device_type`` is that type.
"""

from __future__ import annotations

import builtins

from ._device import DeviceBackend
from ._plugins import PluginCheckWarning, PluginInfo, PluginLoadWarning, registry
from ._plugins import reload as _reload_registry
from ._providers import KernelProvider


def list() -> builtins.list[PluginInfo]:  # noqa: A001 - reads as plugins.list()
    """Every plugin found (entry points and registered objects), with its load status."""
    return builtins.list(registry().plugins.values())


def register(plugin: object, name: str) -> PluginInfo:
    """Load `plugin` (a module or object with hookimpls) as if found under entry point `name`.

    A hook that raises is reported with a PluginLoadWarning and in the returned record
    (status "failed"); the name stays taken until `unregister(name)`.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a plugin name is a non-empty string, got {name!r}")
    return registry().register(plugin, name)


def unregister(name: str) -> None:
    """Remove the plugin `name` and everything it contributed; ValueError if unknown."""
    registry().unregister(name)


def reload() -> builtins.list[PluginInfo]:
    """Forget every plugin (registered ones too) and load the entry points again."""
    return builtins.list(_reload_registry().plugins.values())


def providers() -> dict[str, KernelProvider]:
    """The kernel providers of the loaded plugins, by name."""
    return dict(registry().providers)


def devices() -> dict[str, DeviceBackend]:
    """The device backends of the loaded plugins, by device type."""
    return dict(registry().devices)


def namespace(name: str) -> object:
    """The namespace a plugin registered as `name` (also when a core name hides it)."""
    found = registry().namespaces.get(name)
    if found is None:
        known = ", ".join(sorted(registry().namespaces)) or "none"
        raise ValueError(f"no plugin namespace named {name!r}; registered: {known}")
    return found


def get(name: str) -> PluginInfo:
    """The record of plugin `name`; ValueError listing the known names if there is none."""
    found = registry().plugins.get(name)
    if found is None:
        known = ", ".join(sorted(registry().plugins)) or "none"
        raise ValueError(f"no plugin named {name!r}; known plugins: {known}")
    return found


__all__ = [
    "PluginCheckWarning", "PluginInfo", "PluginLoadWarning", "devices", "get", "list",
    "namespace", "providers", "register", "reload", "unregister",
]  # fmt: skip
