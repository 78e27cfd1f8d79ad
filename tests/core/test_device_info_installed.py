"""Device information on this machine, with whatever plugins are installed."""

from __future__ import annotations

import os

import pygpukit as gp


def test_answers_agree_with_the_installed_cuda_plugin() -> None:
    backend = gp.plugins.devices().get("cuda")
    if backend is None:  # no pygpukit-cuda: the core answers for itself
        assert gp.is_cuda_available() is False
        assert gp.is_nvrtc_available() is False
        assert gp.get_nvrtc_path() is None
        return
    assert gp.is_cuda_available() is bool(backend.devices())
    probe = getattr(backend, "is_nvrtc_available", None)
    if probe is not None:
        assert gp.is_nvrtc_available() is (bool(probe()) and gp.is_cuda_available())
    path = gp.get_nvrtc_path()
    if path is not None:
        assert os.path.exists(path), path


def test_every_present_device_describes_itself() -> None:
    present = [d for b in gp.plugins.devices().values() for d in b.devices()]
    assert any(d.type == "cpu" for d in present)
    for device in present:
        info = gp.get_device_info(device)
        assert info["type"] == device.type
        assert info["index"] == device.index
        assert isinstance(info["name"], str) and info["name"]
