"""Shared fixtures: every test must leave each device's pool where it found it."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from typing import Any

# The test plugins are not installed (tests/plugins/testsite.py puts them on the path of the
# tests that use them); should an environment made by an older setup.sh still hold the
# deliberately broken ones, they must not warn on every plugin load (pytest turns that
# warning into an error). The tests that check how they are reported enable them.
os.environ.setdefault("PYGPUKIT_DISABLE_PLUGINS", "broken,broken_hook")

import pygpukit as gp
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


def _used_bytes() -> dict[str, int]:
    """Used bytes of every device pool that exists now (the CPU's, and a GPU's if present)."""
    used = {}
    for backend in gp.plugins.devices().values():
        for device in backend.devices():
            used[str(device)] = int(backend.memory_stats(device).get("used", 0))
    return used


@pytest.fixture(autouse=True)
def pool_back_to_baseline(request: pytest.FixtureRequest) -> Iterator[None]:
    # pytest keeps the previous failure in sys.last_* (for post-mortem debugging) and drops it
    # only when this test's call starts, after the baseline below: its arrays would then be
    # freed during this test and read as a negative growth. Drop it before measuring.
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)
    gc.collect()
    before = _used_bytes()
    yield
    if request.node.stash.get(_FAILED, False):
        return  # a failure's traceback keeps its arrays alive: not a leak of the code under test
    gc.collect()
    after = _used_bytes()
    grown = {d: after[d] - before.get(d, 0) for d in after if after[d] != before.get(d, 0)}
    assert not grown, (
        f"device pools hold more (or fewer) bytes than before the test: {grown}" + _holders()
    )


def _holders() -> str:
    """With PYGPUKIT_LEAK_DEBUG=1: the live arrays and what refers to each (to find who
    keeps memory after a test)."""
    if not os.environ.get("PYGPUKIT_LEAK_DEBUG"):
        return ""
    lines = []
    arrays = [o for o in gc.get_objects() if isinstance(o, gp.GPUArray) and o.device.type != "cpu"]
    for obj in arrays[:8]:
        lines.append(f"  {obj.shape} {obj.dtype.name} {obj.nbytes} B held by:")
        for r in gc.get_referrers(obj):
            if r is arrays:
                continue
            what = type(r).__name__
            if what == "frame":
                holders = [type(h).__name__ for h in gc.get_referrers(r)][:5]
                what = f"frame {r.f_code.co_name} line {r.f_lineno} <- {holders}"
                for h in gc.get_referrers(r):
                    if type(h).__name__ == "traceback":
                        owners = [type(x).__name__ for x in gc.get_referrers(h)][:5]
                        what += f" (traceback held by {owners})"
            lines.append(f"    {what}")
    return f"\n{len(arrays)} live device arrays:\n" + "\n".join(lines[:60])


@pytest.fixture
def register_provider() -> Iterator[Any]:
    """register_provider(provider): puts a test's KernelProvider in use through a plugin of
    its own, as a third-party package would; every one is unregistered after the test."""
    names: list[str] = []

    def register(provider: gp.KernelProvider) -> None:
        class Plugin:
            @gp.hookimpl
            def pygpukit_register_kernels(self, register: Any) -> None:
                register(provider)

        names.append(f"test-plugin-{provider.name}-{len(names)}")
        gp.plugins.register(Plugin(), names[-1])

    yield register
    for name in reversed(names):
        gp.plugins.unregister(name)
