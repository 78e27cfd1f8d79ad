"""Triton backend tests: host tests need Triton installed (they compile for sm_90 without a
GPU or run Triton's interpreter); GPU tests (marked `gpu`) also need a CUDA GPU."""

from __future__ import annotations

import pytest


def triton_missing_reason() -> str | None:
    from pygpukit.triton import availability

    ok, why = availability.status()
    return None if ok else why


def gpu_unavailable_reason() -> str | None:
    try:
        import pygpukit_cuda._loader as loader
    except ImportError as exc:
        return f"pygpukit-cuda is not installed ({exc})"
    if loader.device_count() == 0:
        return f"no CUDA GPU: {loader.driver_status()}"
    return triton_missing_reason()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    checked, reason = False, None
    for item in items:
        if item.get_closest_marker("gpu") is not None and "/triton/" in str(item.path):
            if not checked:
                checked, reason = True, gpu_unavailable_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
