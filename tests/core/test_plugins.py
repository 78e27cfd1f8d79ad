"""pygpukit.plugins: records, in-process registration, allow/deny lists, broken plugins.

The broken test plugin is made findable only inside these tests (a dist-info on sys.path
or PYTHONPATH), so the rest of the suite never loads it; where it is pip-installed too,
the suite's conftest keeps it out with PYGPUKIT_DISABLE_PLUGINS.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.plugins import PluginLoadWarning

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite

STATUS_CODE = """
import json, warnings
warnings.simplefilter("ignore")
import pygpukit as gp
x = gp.asarray([1.0, 2.0])
print(json.dumps({
    "plugins": {p.name: [p.status, p.distribution, p.error] for p in gp.plugins.list()},
    "providers": sorted(gp.plugins.providers()),
    "add": gp.add(x, x).tolist(),
}))
"""


def test_cpu_plugin_found_through_its_entry_point() -> None:
    cpu = gp.plugins.get("cpu")
    assert (cpu.status, cpu.distribution, cpu.value) == (
        "loaded", "pygpukit-core", "pygpukit.backends.cpu"
    )  # fmt: skip
    assert cpu.version == gp.__version__
    assert (cpu.devices, cpu.providers) == (["cpu"], ["cpu"])
    assert cpu in gp.plugins.list()
    assert gp.plugins.providers()["cpu"].device_type == "cpu"
    assert gp.plugins.devices()["cpu"].type == "cpu"


def test_returned_maps_are_copies() -> None:
    gp.plugins.providers().clear()
    gp.plugins.devices().clear()
    assert "cpu" in gp.plugins.providers() and "cpu" in gp.plugins.devices()


class Contributor:
    """An in-process plugin: one provider and one namespace."""

    def __init__(self) -> None:
        self.provider = gp.KernelProvider("inproc", device_type="cpu", priority=-5)
        self.provider.add("negative", lambda x, out: None, dtypes=["float64"])

    @gp.hookimpl
    def pygpukit_register_kernels(self, register: Callable[[Any], None]) -> None:
        register(self.provider)

    @gp.hookimpl
    def pygpukit_register_namespaces(self, register: Callable[[str, object], None]) -> None:
        register("toyspace", {"hello": "world"})


@pytest.fixture
def contributor() -> Iterator[Contributor]:
    plugin = Contributor()
    gp.plugins.register(plugin, "contributor")
    yield plugin
    if "contributor" in {p.name for p in gp.plugins.list()}:
        gp.plugins.unregister("contributor")


def test_register_and_unregister(contributor: Contributor) -> None:
    info = gp.plugins.get("contributor")
    assert (info.status, info.providers, info.namespaces) == ("loaded", ["inproc"], ["toyspace"])
    assert gp.plugins.providers()["inproc"] is contributor.provider
    assert gp.toyspace == {"hello": "world"}
    gp.plugins.unregister("contributor")
    assert "inproc" not in gp.plugins.providers()
    with pytest.raises(AttributeError, match="no attribute 'toyspace'"):
        gp.toyspace  # noqa: B018


def test_register_refuses_taken_and_bad_names(contributor: Contributor) -> None:
    with pytest.raises(ValueError, match="a plugin named 'contributor' is already registered"):
        gp.plugins.register(object(), "contributor")
    with pytest.raises(TypeError, match="a plugin name is a non-empty string"):
        gp.plugins.register(object(), "")
    with pytest.raises(ValueError, match="no plugin named 'nope'"):
        gp.plugins.unregister("nope")
    with pytest.raises(ValueError, match=r"no plugin named 'nope'; known plugins: .*cpu"):
        gp.plugins.get("nope")


class Raising:
    @gp.hookimpl
    def pygpukit_register_kernels(self, register: Callable[[Any], None]) -> None:
        raise RuntimeError("no libtoy.so")


def test_plugin_whose_hook_raises_is_reported_and_skipped() -> None:
    why = "'raising' skipped: hook pygpukit_register_kernels raised: RuntimeError: no libtoy.so"
    with pytest.warns(PluginLoadWarning, match=why):
        info = gp.plugins.register(Raising(), "raising")
    try:
        assert info.status == "failed"
        assert "no libtoy.so" in info.error
        x = gp.asarray([1.0])
        assert gp.add(x, x).tolist() == [2.0]  # the rest still works
    finally:
        gp.plugins.unregister("raising")


@pytest.fixture
def broken_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for entry in testsite.site_paths(tmp_path, testsite.BROKEN):
        monkeypatch.syspath_prepend(entry)
    monkeypatch.delenv("PYGPUKIT_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("PYGPUKIT_PLUGINS", raising=False)
    gp.config.reload()
    yield
    monkeypatch.undo()
    gp.config.reload()
    gp.plugins.reload()  # back to the entry points the rest of the suite sees


def test_broken_entry_points_are_reported_and_skipped_in_process(broken_on_path: None) -> None:
    with pytest.warns(PluginLoadWarning) as caught:
        records = {p.name: p for p in gp.plugins.reload()}
    messages = " ".join(str(w.message) for w in caught)
    assert "'broken' skipped: import of pygpukit_broken.import_error failed" in messages
    assert "'broken_hook' skipped: hook pygpukit_register_kernels raised" in messages
    assert records["broken"].status == "failed"
    assert records["broken"].distribution == "pygpukit-broken"
    assert "deliberately broken plugin" in records["broken"].error
    assert records["broken_hook"].status == "failed"
    assert records["cpu"].status == "loaded"
    x = gp.asarray(np.arange(3, dtype=np.float32))
    assert gp.add(x, x).tolist() == [0.0, 2.0, 4.0]


def test_broken_plugin_in_subprocess_warns_and_the_rest_loads(tmp_path: Path) -> None:
    code = "import pygpukit as gp; gp.plugins.list()"
    done = testsite.run(["-c", code], tmp_path, packages=(testsite.TOYBLAS, testsite.BROKEN))
    assert done.returncode == 0, done.stderr
    assert "PluginLoadWarning: PyGPUkit plugin 'broken' skipped" in done.stderr
    got = testsite.run_json(STATUS_CODE, tmp_path, packages=(testsite.TOYBLAS, testsite.BROKEN))
    assert got["plugins"]["broken"][0] == "failed"
    assert got["plugins"]["broken_hook"][0] == "failed"
    assert got["plugins"]["toyblas"][0] == "loaded"
    assert {"cpu", "toyblas"} <= set(got["providers"])  # other installed plugins may add more
    assert got["add"] == [2.0, 4.0]


def test_disable_list_keeps_a_plugin_out(tmp_path: Path) -> None:
    got = testsite.run_json(
        STATUS_CODE, tmp_path, packages=(testsite.TOYBLAS, testsite.BROKEN),
        PYGPUKIT_DISABLE_PLUGINS="broken,broken_hook,toyblas",
    )  # fmt: skip
    status = {k: v[0] for k, v in got["plugins"].items()}
    assert [status[k] for k in ("broken", "broken_hook", "toyblas")] == ["disabled"] * 3
    assert status["cpu"] == "loaded"
    assert "cpu" in got["providers"] and "toyblas" not in got["providers"]


def test_allow_list_loads_only_named_plugins(tmp_path: Path) -> None:
    got = testsite.run_json(
        STATUS_CODE, tmp_path, packages=(testsite.TOYBLAS, testsite.BROKEN),
        PYGPUKIT_PLUGINS="cpu",
    )  # fmt: skip
    assert got["plugins"]["toyblas"][0] == "not allowed"
    assert got["plugins"]["broken"][0] == "not allowed"
    assert got["plugins"]["cpu"][0] == "loaded"
    assert got["providers"] == ["cpu"]
