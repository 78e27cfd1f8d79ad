"""The pytest plugin shipped with PyGPUkit: the backend option and the test fixtures.

pytest loads it through the ``pytest11`` entry point of pygpukit-core, so any project
that has PyGPUkit installed gets:

- ``--pygpukit-backend=NAME``: the kernel provider under test (default ``cpu``); the
  conformance suite runs every op that provider claims, forcing it with ``backend=NAME``;
- fixture ``backend``: that provider's name;
- fixture ``device``: a device of the provider's device type (skips when none is present);
- fixture ``register_plugin``: registers in-process plugin objects for one test and
  unregisters them at teardown.

It imports PyGPUkit lazily, so loading it costs nothing in runs that don't use it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .._device import Device
    from .._plugins import PluginInfo

OPTION = "--pygpukit-backend"
DEFAULT_BACKEND = "cpu"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pygpukit", "PyGPUkit backend testing")
    group.addoption(
        OPTION,
        dest="pygpukit_backend",
        default=None,
        metavar="NAME",
        help="kernel provider to test (default: cpu); run its conformance suite with "
        "`pytest --pygpukit-backend=NAME --pyargs pygpukit.testing.conformance`",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "conformance: a PyGPUkit backend conformance test (pygpukit.testing)"
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    name = config.getoption("pygpukit_backend", default=None)
    return f"pygpukit backend under test: {name}" if name else None


def backend_name(config: pytest.Config) -> str:
    """The provider named by ``--pygpukit-backend`` (or ``cpu``); UsageError if unknown."""
    name = config.getoption("pygpukit_backend", default=None) or DEFAULT_BACKEND
    from .._plugins import registry

    providers = registry().providers
    if name not in providers:
        known = ", ".join(sorted(providers)) or "none"
        raise pytest.UsageError(
            f"{OPTION}={name}: no kernel provider of that name is registered "
            f"(registered: {known}); is its package installed?"
        )
    return name


def device_for(name: str) -> Device | None:
    """The first present device of provider `name`'s device type, or None."""
    from .._device import Device
    from .._placement import backend_of
    from .._plugins import registry

    provider = registry().providers[name]
    try:
        present = backend_of(Device(provider.device_type, 0)).devices()
    except ValueError:
        return None  # no plugin provides that device type
    return present[0] if present else None


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The name of the kernel provider under test (``--pygpukit-backend``, default cpu)."""
    return backend_name(request.config)


@pytest.fixture
def device(backend: str) -> Device:
    """A device the provider under test runs on; skips the test when none is present."""
    found = device_for(backend)
    if found is None:
        from .._plugins import registry

        kind = registry().providers[backend].device_type
        pytest.skip(f"backend {backend!r} runs on {kind!r} devices and none is present")
    return found


RegisterPlugin = Callable[[object, str], "PluginInfo"]


@pytest.fixture
def register_plugin() -> Iterator[RegisterPlugin]:
    """``register_plugin(obj, name)`` registers a plugin object until the test ends."""
    api = _plugin_api()
    names: list[str] = []

    def register(plugin: object, name: str) -> PluginInfo:
        info: PluginInfo = api.register(plugin, name)
        names.append(name)
        return info

    yield register
    for name in reversed(names):
        with contextlib.suppress(ValueError):  # the test may have unregistered it itself
            api.unregister(name)


def _plugin_api() -> Any:
    """The public `pygpukit.plugins` module, or the registry where that doesn't exist."""
    try:
        from .. import plugins

        if hasattr(plugins, "register") and hasattr(plugins, "unregister"):
            return plugins
    except ImportError:
        pass
    from .._plugins import registry

    return registry()
