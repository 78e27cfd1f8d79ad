"""Whisper's front end frames audio through pygpukit.audio, which keeps frame indices on
each device: free them after each test, so the root conftest's pool check sees only what
the test itself left behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pygpukit import audio


@pytest.fixture(autouse=True)
def _free_audio_caches() -> Iterator[None]:
    yield
    audio.clear_cache()
