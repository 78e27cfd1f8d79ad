"""Device information: CUDA and NVRTC answers come from plugins; the CPU describes itself.

Every test starts from a CPU-only plugin set (whatever is installed on the machine) and
adds fake CUDA and JIT plugins where it needs them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import Device, DeviceBackend, hookimpl


@pytest.fixture(autouse=True)
def cpu_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Load only the built-in CPU plugin, as on a machine without pygpukit-cuda."""
    monkeypatch.setenv("PYGPUKIT_PLUGINS", "cpu")
    gp.config.reload()
    gp.plugins.reload()
    yield
    monkeypatch.undo()
    gp.config.reload()
    gp.plugins.reload()  # back to the plugins the rest of the suite sees


class FakeCuda(DeviceBackend):
    """A CUDA backend without hardware: it only answers questions."""

    type = "cuda"

    def __init__(self, count: int, nvrtc: Any = None) -> None:
        self.count = count
        self.nvrtc = nvrtc

    def devices(self) -> list[Device]:
        return [Device("cuda", i) for i in range(self.count)]

    def allocate(self, device: Device, nbytes: int) -> Any:
        raise MemoryError("the fake CUDA backend has no memory")

    def upload(self, buffer: Any, offset: int, host: np.ndarray) -> None:
        raise NotImplementedError

    def download(self, buffer: Any, offset: int, out: np.ndarray) -> None:
        raise NotImplementedError

    def is_nvrtc_available(self) -> bool:
        return self.nvrtc is not None

    def get_nvrtc_path(self) -> str | None:
        return self.nvrtc

    def info(self, device: Device) -> dict[str, Any]:
        return {"name": "Fake GPU", "compute_capability": (9, 0), "memory": 80 << 30}


class GpuWithoutJit(FakeCuda):
    """A CUDA device backend that leaves NVRTC questions to other plugins."""

    is_nvrtc_available = None  # type: ignore[assignment]
    get_nvrtc_path = None  # type: ignore[assignment]


class DevicesPlugin:
    def __init__(self, backend: DeviceBackend) -> None:
        self.backend = backend

    @hookimpl
    def pygpukit_register_devices(self, register: Any) -> None:
        register(self.backend)


class JitNamespace:
    def is_nvrtc_available(self) -> bool:
        return True

    def get_nvrtc_path(self) -> str:
        return "/opt/cuda/lib64/libnvrtc.so.12"


class NamespacePlugin:
    def __init__(self, namespace: object) -> None:
        self.namespace = namespace

    @hookimpl
    def pygpukit_register_namespaces(self, register: Any) -> None:
        register("fakejit", self.namespace)


def test_cpu_only_answers() -> None:
    assert gp.is_cuda_available() is False
    assert gp.is_nvrtc_available() is False
    assert gp.get_nvrtc_path() is None


def test_cpu_device_info() -> None:
    info = gp.get_device_info()
    assert info == gp.get_device_info("cpu")
    assert info["type"] == "cpu"
    assert isinstance(info["name"], str) and info["name"]
    assert isinstance(info["cores"], int) and info["cores"] >= 1
    assert info["numpy"] == np.__version__


def test_device_info_of_a_missing_device_type() -> None:
    with pytest.raises(ValueError, match="no plugin provides device type 'cuda'"):
        gp.get_device_info("cuda:0")
    with pytest.raises(TypeError, match="a device is a string"):
        gp.get_device_info(3)  # type: ignore[arg-type]


def test_cuda_plugin_with_devices_and_nvrtc(register_plugin: Any) -> None:
    register_plugin(DevicesPlugin(FakeCuda(2, "/usr/lib/libnvrtc.so")), "fakecuda")
    assert gp.is_cuda_available() is True
    assert gp.is_nvrtc_available() is True
    assert gp.get_nvrtc_path() == "/usr/lib/libnvrtc.so"
    info = gp.get_device_info("cuda:1")
    assert info["type"] == "cuda" and info["index"] == 1
    assert info["name"] == "Fake GPU" and info["compute_capability"] == (9, 0)


def test_cuda_plugin_without_devices_or_nvrtc(register_plugin: Any) -> None:
    register_plugin(DevicesPlugin(FakeCuda(0)), "fakecuda")
    assert gp.is_cuda_available() is False
    assert gp.is_nvrtc_available() is False
    assert gp.get_nvrtc_path() is None
    with pytest.raises(ValueError, match=r"device cuda:0 is not available \(present: none\)"):
        gp.get_device_info("cuda:0")


def test_nvrtc_answered_by_a_namespace(register_plugin: Any) -> None:
    register_plugin(NamespacePlugin(JitNamespace()), "fakejit")
    assert gp.is_cuda_available() is False
    # NVRTC without a device cannot run gp.jit, so the seed's `if` must take its else branch
    assert gp.is_nvrtc_available() is False
    assert gp.get_nvrtc_path() == "/opt/cuda/lib64/libnvrtc.so.12"
    register_plugin(DevicesPlugin(GpuWithoutJit(1)), "fakegpu")
    assert gp.is_nvrtc_available() is True


def test_a_raising_probe_warns_and_answers_no(register_plugin: Any) -> None:
    class Broken:
        def is_nvrtc_available(self) -> bool:
            raise OSError("libnvrtc.so: cannot open shared object file")

    register_plugin(NamespacePlugin(Broken()), "brokenjit")
    register_plugin(DevicesPlugin(GpuWithoutJit(1)), "fakegpu")
    with pytest.warns(RuntimeWarning, match="cannot open shared object file"):
        assert gp.is_nvrtc_available() is False


def test_a_failing_driver_is_reported_as_unavailable(register_plugin: Any) -> None:
    class NoDriver(FakeCuda):
        def devices(self) -> list[Device]:
            raise RuntimeError("CUDA driver version is insufficient")

    register_plugin(DevicesPlugin(NoDriver(1)), "nodriver")
    with pytest.warns(RuntimeWarning, match="driver version is insufficient"):
        assert gp.is_cuda_available() is False
