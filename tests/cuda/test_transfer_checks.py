"""The host-side checks of pygpukit_cuda.transfers (no GPU needed: they run first)."""

from __future__ import annotations

from dataclasses import dataclass

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
