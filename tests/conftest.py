"""Shared fixtures: every test must leave each device's pool where it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import pygpukit as gp


@pytest.fixture(autouse=True)
def pool_back_to_baseline() -> Iterator[None]:
    gc.collect()
    before = gp.memory.stats("cpu")["used"]
    yield
    gc.collect()
    after = gp.memory.stats("cpu")["used"]
    assert after == before, f"CPU pool holds {after - before} more bytes than before the test"
