"""The host-side checks of pygpukit_cuda.transfers (no GPU needed: they run first)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pygpukit_cuda import transfers


@dataclass
class FakeBuffer:
    nbytes: int


def test_contiguity_size_and_type_are_checked() -> None:
    buf = FakeBuffer(400)
    host = np.random.default_rng(0).standard_normal(200).astype(np.float32)
    transfers._check_range("upload", buf, 0, host[:100])  # fits exactly
    with pytest.raises(ValueError, match=r"C-contiguous.*strides"):
        transfers._check_range("upload", buf, 0, host[::2])
    with pytest.raises(ValueError, match="upload of 800 bytes at offset 0 does not fit"):
        transfers._check_range("upload", buf, 0, host)
    with pytest.raises(ValueError, match="does not fit the device buffer of 400 bytes"):
        transfers._check_range("download", buf, 4, host[:100])
    with pytest.raises(ValueError, match="does not fit"):
        transfers._check_range("download", buf, -1, host[:10])
    with pytest.raises(TypeError, match="needs a NumPy array, got list"):
        transfers._check_range("upload", buf, 0, [1.0])  # type: ignore[arg-type]


def test_tuning_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYGPUKIT_TRANSFER_DIRECT_BYTES", "4096")
    monkeypatch.setenv("PYGPUKIT_TRANSFER_THREADS", "2")
    monkeypatch.delenv("PYGPUKIT_TRANSFER_CHUNK_BYTES", raising=False)
    assert transfers._tuning() == {"direct_below": 4096, "threads": 2}
    monkeypatch.setenv("PYGPUKIT_TRANSFER_THREADS", "many")
    with pytest.raises(ValueError, match="PYGPUKIT_TRANSFER_THREADS must be an integer"):
        transfers._tuning()


def test_every_buffer_goes_to_the_copier_by_address(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []

    class Copier:
        def upload_to(self, ptr: int, host: np.ndarray, stream: int) -> None:
            calls.append(("upload_to", ptr, host.nbytes, stream))

        def download_from(self, ptr: int, out: np.ndarray, stream: int) -> None:
            calls.append(("download_from", ptr, out.nbytes, stream))

    ctx = SimpleNamespace(ordinal=0)
    monkeypatch.setattr(transfers, "copier", lambda ordinal: Copier())
    foreign = SimpleNamespace(context=ctx, ptr=8192, nbytes=400)  # e.g. adopted by DLPack
    host = np.arange(10, dtype=np.float32)
    transfers.upload(foreign, 16, host)
    transfers.download(foreign, 4, host)
    transfers.upload(foreign, 0, host[:0])  # nothing to copy: no call at all
    native = pytest.importorskip("pygpukit_cuda._native")
    rust = pytest.importorskip("_pygpukit_rust")
    pool = rust.MemoryPool()
    buf = native.buffer_allocator(pool.fast_table(), ctx)(400)
    transfers.upload(buf, 8, host)
    transfers.download(buf, 4, host)
    assert calls == [
        ("upload_to", 8192 + 16, 40, 0), ("download_from", 8192 + 4, 40, 0),
        ("upload_to", buf.ptr + 8, 40, 0), ("download_from", buf.ptr + 4, 40, 0),
    ]  # fmt: skip
    del buf
