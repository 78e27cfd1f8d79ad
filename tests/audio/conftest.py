"""The audio tests free pygpukit.audio's cached frame indices after each test, so the
root conftest's pool check sees only what the test itself left behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pygpukit import audio


@pytest.fixture(autouse=True)
def _free_audio_caches() -> Iterator[None]:
    yield
    audio.clear_cache()
