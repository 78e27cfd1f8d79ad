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


@pytest.fixture
def slicing_shrink(monkeypatch: pytest.MonkeyPatch) -> int:
    """How much smaller sliced-op tests make their operands: 1, or 8 under compute-sanitizer
    (which runs kernels a hundred times slower). At 8 each matrix dimension is divided by 8
    and 1-D sizes by 64, and the slicing policy's sizes shrink to match, so every op is cut
    into the same slices as at full size."""
    if not os.environ.get("PYGPUKIT_UNDER_SANITIZER"):
        return 1
    from pygpukit_cuda import slicing

    shrink = 8
    monkeypatch.setattr(slicing, "SLICE_BYTES", slicing.SLICE_BYTES // shrink**2)
    monkeypatch.setattr(slicing, "SLICE_FLOPS", slicing.SLICE_FLOPS // shrink**3)
    monkeypatch.setattr(slicing, "ROW_STEP", slicing.ROW_STEP // shrink)
    return shrink
