"""The hooks a PyGPUkit plugin implements.

A plugin is any module or object listed under the entry-point group ``pygpukit``::

    # the plugin's pyproject.toml
    [project.entry-points.pygpukit]
    mybackend = "mybackend.plugin"

and implementing one or more of the hooks below, marked with ``pygpukit.hookimpl``. Each
hook receives a ``register`` callback: call it once per thing you contribute. Hooks are
called when PyGPUkit first needs its plugins (not at import), and again after
``pygpukit.plugins.reload()``. A hook that raises is reported by ``python -m pygpukit
info`` and ``doctor``; the rest of that plugin and every other plugin still load.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ._device import DeviceBackend
    from ._providers import KernelProvider

hookspec = pluggy.HookspecMarker("pygpukit")
hookimpl = pluggy.HookimplMarker("pygpukit")


@hookspec
def pygpukit_register_devices(register: Callable[[DeviceBackend], None]) -> None:
    """Contribute device types.

    Call ``register(backend)`` with a :class:`pygpukit.DeviceBackend` for each device type
    the plugin drives (its allocator, host transfers and synchronization). One backend per
    type: a second registration of the same type is reported as a conflict and ignored.
    Register the backend even when no device is present; its ``devices()`` returns ``[]``
    and ``status()`` says why, which ``doctor`` shows to the user.
    """


@hookspec
def pygpukit_register_kernels(register: Callable[[KernelProvider], None]) -> None:
    """Contribute kernel providers.

    Call ``register(provider)`` with a :class:`pygpukit.KernelProvider`: a named set of
    kernels for one device type, each declaring the op it implements and the dtypes it
    accepts. The dispatcher picks, per (op, dtypes, device), the first provider in the
    user's priority order that has the op for those dtypes (a kernel that lists no dtypes
    takes the real ones: complex dtypes are served only where listed). Provider names are
    what users write in ``PYGPUKIT_BACKEND`` and ``gp.config.use(backend=...)``; they must
    be unique.
    """


@hookspec
def pygpukit_register_namespaces(register: Callable[[str, object], None]) -> None:
    """Contribute op namespaces such as ``llm`` or ``audio``.

    Call ``register(name, namespace)``; the object then answers as ``pygpukit.<name>``
    (for example ``gp.audio.stft``) unless the core already has that attribute.
    """


@hookspec
def pygpukit_diagnose(report: Callable[[str, bool, str], None]) -> None:
    """Add checks to ``python -m pygpukit doctor``.

    Call ``report(check, ok, detail)`` per check: ``check`` names what was tested, ``ok``
    says whether it works, and ``detail`` says what was found or, when it fails, which
    setting or install fixes it.
    """
