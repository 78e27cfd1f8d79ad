"""Finding and loading plugins: entry points, allow and deny lists, failure reports."""

from __future__ import annotations

import difflib
import importlib.metadata as md
import threading
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from . import hookspecs
from ._device import DeviceBackend
from ._providers import KernelProvider

ENTRY_POINT_GROUP = "pygpukit"


class PluginLoadWarning(RuntimeWarning):
    """A plugin failed to load or register; it was skipped."""


class PluginCheckWarning(UserWarning):
    """A plugin loaded, but part of what it registered can never take effect: a kernel
    for an op nobody calls, a provider for a device type nobody registers, a misspelt hook
    name, or a namespace hidden by a core name."""


#: core names that hand over to a plugin's namespace of the same name (``gp.jit``)
DELEGATED_NAMESPACES = frozenset({"jit"})


@dataclass
class PluginInfo:
    """What `python -m pygpukit info` says about one plugin."""

    name: str
    #: "loaded", "failed", "disabled" (deny list) or "not allowed" (allow list)
    status: str
    distribution: str = ""
    version: str = ""
    value: str = ""
    error: str = ""
    devices: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)


class Registry:
    """Everything plugins contributed: devices, kernel providers and namespaces."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("pygpukit")
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self.devices: dict[str, DeviceBackend] = {}
        self.providers: dict[str, KernelProvider] = {}
        self.namespaces: dict[str, object] = {}
        #: bumped on every change so dispatch caches know to forget
        self.generation = 0
        self._pending: list[str] = []
        #: the allow and deny lists the entry points were loaded with
        self.allow: list[str] | None = None
        self.deny: list[str] = []

    def not_loaded_note(self) -> str:
        """Why installed plugins were left out (allow or deny list), for error messages
        that would otherwise blame the installation; "" when nothing was left out."""
        parts = []
        left = [i.name for i in self.plugins.values() if i.status == "not allowed"]
        if left:
            parts.append(
                f"plugin(s) {', '.join(left)} not loaded: not in the allow-list "
                f"{self.allow} ({_setting_source('plugins')})"
            )
        off = [i.name for i in self.plugins.values() if i.status == "disabled"]
        if off:
            parts.append(
                f"plugin(s) {', '.join(off)} disabled ({_setting_source('disable_plugins')})"
            )
        return "; ".join(parts)

    # -- loading ---------------------------------------------------------------------
    def load_entry_points(self, allow: list[str] | None, deny: list[str]) -> None:
        self.allow, self.deny = allow, deny
        found = md.entry_points(group=ENTRY_POINT_GROUP)
        if allow is not None:
            names = {ep.name for ep in found}
            for name in allow:
                if name not in names:
                    self._pending.append(
                        f"the plugin allow-list ({_setting_source('plugins')}) names "
                        f"{name!r}, which no installed package provides; installed plugins: "
                        f"{', '.join(sorted(names)) or 'none'}"
                    )
        for ep in found:
            if ep.name in self.plugins:
                continue
            dist = getattr(ep, "dist", None)
            info = PluginInfo(
                ep.name,
                "loaded",
                distribution=dist.name if dist else "",
                version=dist.version if dist else "",
                value=ep.value,
            )
            self.plugins[ep.name] = info
            if ep.name in deny:
                info.status = "disabled"
                continue
            if allow is not None and ep.name not in allow:
                info.status = "not allowed"
                continue
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plugin must not break the import
                self._fail(info, f"import of {ep.value} failed", exc)
                continue
            self._add(obj, info)
        self._collect()

    def register(self, plugin: object, name: str) -> PluginInfo:
        """Register an in-process plugin object (tests, notebooks)."""
        if name in self.plugins:
            raise ValueError(f"a plugin named {name!r} is already registered")
        info = PluginInfo(name, "loaded", value=repr(plugin))
        self.plugins[name] = info
        self._add(plugin, info)
        self._collect()
        return info

    def unregister(self, name: str) -> None:
        info = self.plugins.pop(name, None)
        if info is None:
            raise ValueError(f"no plugin named {name!r}; loaded: {', '.join(self.plugins)}")
        if self.pm.get_plugin(name) is not None:
            self.pm.unregister(name=name)
        self._collect()

    def _add(self, obj: object, info: PluginInfo) -> None:
        try:
            self.pm.register(obj, name=info.name)
        except Exception as exc:
            self._fail(info, "registration with pluggy failed", exc)

    def _fail(self, info: PluginInfo, what: str, exc: BaseException) -> None:
        info.status = "failed"
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        info.error = f"{what}: {last}"
        self._pending.append(f"PyGPUkit plugin {info.name!r} skipped: {info.error}")

    def _flush_warnings(self) -> None:
        """Warn about failures only once the registry is whole: a warning turned into an
        exception (pytest -W error) must not leave the other plugins unloaded."""
        pending, self._pending = self._pending, []
        for message in pending:
            warnings.warn(message, PluginLoadWarning, stacklevel=4)

    # -- collecting contributions ----------------------------------------------------
    def _collect(self) -> None:
        self.devices.clear()
        self.providers.clear()
        self.namespaces.clear()
        for info in self.plugins.values():
            info.devices.clear()
            info.providers.clear()
            info.namespaces.clear()
        self._call("pygpukit_register_devices", self._add_device)
        self._call("pygpukit_register_kernels", self._add_provider)
        self._call("pygpukit_register_namespaces", self._add_namespace)
        self._roll_back_failed()
        self._check_contributions()
        self.generation += 1
        from . import config

        config.invalidate()  # cached dispatch choices may name a provider that changed
        self._flush_warnings()

    def _call(self, hook: str, add: Callable[..., None]) -> None:
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            info = self.plugins.get(impl.plugin_name)
            if info is None or info.status != "loaded":
                continue

            def register(*args: Any, _info: PluginInfo = info) -> None:
                add(_info, *args)

            try:
                impl.function(register=register)
            except Exception as exc:
                self._fail(info, f"hook {hook} raised", exc)

    def _roll_back_failed(self) -> None:
        """A plugin one of whose hooks raised is skipped whole: what its other hooks
        registered goes too, so that its status ("failed") tells the truth."""
        for info in self.plugins.values():
            if info.status != "failed":
                continue
            for kind in info.devices:
                self.devices.pop(kind, None)
            for name in info.providers:
                self.providers.pop(name, None)
            for name in info.namespaces:
                self.namespaces.pop(name, None)
            info.devices.clear()
            info.providers.clear()
            info.namespaces.clear()

    def _check_contributions(self) -> None:
        """Warn about registrations that can never take effect (see PluginCheckWarning)."""
        from . import ops_catalog

        checks: list[str] = []
        for info in self.plugins.values():
            for name in info.providers:
                provider = self.providers[name]
                if provider.device_type not in self.devices:
                    known = ", ".join(sorted(self.devices)) or "none"
                    checks.append(
                        f"plugin {info.name!r}: provider {name!r} serves device type "
                        f"{provider.device_type!r}, which no plugin registers (known: {known})"
                    )
                unknown = sorted(op for op in provider.kernels if not ops_catalog.is_known(op))
                for op in unknown:
                    close = difflib.get_close_matches(op, sorted(ops_catalog.conventions()), 1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    checks.append(
                        f"plugin {info.name!r}: provider {name!r} has a kernel for unknown op "
                        f"{op!r}{hint}; nothing calls it unless the plugin registers the op "
                        "with pygpukit.ops_catalog.register_op"
                    )
        for hook_name in dir(self.pm.hook):
            caller = getattr(self.pm.hook, hook_name)
            if hook_name.startswith("_") or not hasattr(caller, "has_spec") or caller.has_spec():
                continue
            hooks = [n for n in dir(hookspecs) if n.startswith("pygpukit_")]
            close = difflib.get_close_matches(hook_name, hooks, 1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; hooks are {', '.join(hooks)}"
            for impl in caller.get_hookimpls():
                checks.append(
                    f"plugin {impl.plugin_name!r}: {hook_name!r} is not a PyGPUkit hook, so it "
                    f"is never called{hint}"
                )
        for message in checks:
            warnings.warn(message, PluginCheckWarning, stacklevel=5)

    def _add_device(self, info: PluginInfo, backend: DeviceBackend) -> None:
        if not isinstance(backend, DeviceBackend):
            raise TypeError(f"register() wants a DeviceBackend, got {type(backend).__name__}")
        if backend.type in self.devices:
            self._pending.append(
                f"plugin {info.name!r} registers device type {backend.type!r} again; ignored"
            )
            return
        self.devices[backend.type] = backend
        info.devices.append(backend.type)

    def _add_provider(self, info: PluginInfo, provider: KernelProvider) -> None:
        if not isinstance(provider, KernelProvider):
            raise TypeError(f"register() wants a KernelProvider, got {type(provider).__name__}")
        if provider.name in self.providers:
            raise ValueError(f"kernel provider {provider.name!r} is already registered")
        self.providers[provider.name] = provider
        provider.plugin = info.name
        info.providers.append(provider.name)

    def _add_namespace(self, info: PluginInfo, name: str, namespace: object) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"register(name, namespace) wants an identifier name, got {name!r}")
        if name in self.namespaces:
            raise ValueError(f"namespace {name!r} is already registered")
        import pygpukit

        core = vars(pygpukit).get(name)
        # a sub-package registering itself (pygpukit.llm as gp.llm) hides nothing
        if name in vars(pygpukit) and name not in DELEGATED_NAMESPACES and core is not namespace:
            warnings.warn(
                f"plugin {info.name!r}: namespace {name!r} is hidden by the core name "
                f"pygpukit.{name}; pick another name (it stays reachable as "
                f"pygpukit.plugins.namespace({name!r}))",
                PluginCheckWarning,
                stacklevel=6,
            )
        self.namespaces[name] = namespace
        info.namespaces.append(name)


def _setting_source(key: str) -> str:
    from . import config

    setting = config.get()[key]
    return f"{setting.source}" if setting.source != "default" else "default"


_registry: Registry | None = None
_lock = threading.Lock()


def registry() -> Registry:
    """The process's plugin registry, loading the entry points on first use."""
    global _registry
    if _registry is not None:
        return _registry
    with _lock:
        if _registry is None:
            from . import config

            cfg = config.current()
            reg = Registry()
            _registry = reg
            reg.load_entry_points(cfg.get("plugins"), cfg.get("disable_plugins"))
    return _registry


def reload() -> Registry:
    """Forget every plugin and load the entry points again (after changing the lists)."""
    global _registry
    with _lock:
        old = _registry
        _registry = None
    if old is not None:
        old.pm = pluggy.PluginManager("pygpukit")  # let the old hooks go
    return registry()
