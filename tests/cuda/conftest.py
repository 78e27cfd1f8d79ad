"""CUDA backend tests: GPU tests (marked `gpu`) skip cleanly where no GPU is usable."""

from __future__ import annotations

import pytest


def gpu_unavailable_reason() -> str | None:
    try:
        import pygpukit_cuda._loader as loader
    except ImportError as exc:
        return f"pygpukit-cuda is not installed ({exc})"
    if loader.device_count() == 0:
        return f"no CUDA GPU: {loader.driver_status()}"
    if not loader.is_nvrtc_available():
        return f"no NVRTC: {loader.nvrtc_status()}"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    checked = False
    for item in items:
        if item.get_closest_marker("gpu") is None:
            continue
        if not checked:
            reason, checked = gpu_unavailable_reason(), True
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
