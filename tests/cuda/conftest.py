"""CUDA backend tests: GPU tests (marked `gpu`) skip cleanly where no GPU is usable; timing
tests (marked `timing`) skip under compute-sanitizer (PYGPUKIT_UNDER_SANITIZER set), which
slows kernels unevenly, so their figures would mean nothing."""

from __future__ import annotations

import os

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
    sanitized = bool(os.environ.get("PYGPUKIT_UNDER_SANITIZER"))
    for item in items:
        if sanitized and item.get_closest_marker("timing") is not None:
            item.add_marker(pytest.mark.skip(reason="timing: compute-sanitizer slows kernels"))
        if item.get_closest_marker("gpu") is None:
            continue
        if not checked:
            reason, checked = gpu_unavailable_reason(), True
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
