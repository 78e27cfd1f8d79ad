"""Shared fixtures: every test must leave each device's pool where it found it."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

# The deliberately broken test plugins would warn on every plugin load (and pytest turns
# that warning into an error); the tests that check how they are reported enable them.
os.environ.setdefault("PYGPUKIT_DISABLE_PLUGINS", "broken,broken_hook")

import pytest  # noqa: E402

import pygpukit as gp  # noqa: E402


@pytest.fixture(autouse=True)
def pool_back_to_baseline() -> Iterator[None]:
    gc.collect()
    before = gp.memory.stats("cpu")["used"]
    yield
    gc.collect()
    after = gp.memory.stats("cpu")["used"]
    assert after == before, f"CPU pool holds {after - before} more bytes than before the test"
