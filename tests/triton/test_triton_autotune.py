"""Autotuning keeps each problem's winner on disk under the cache_dir setting, so a second
process (here: a cleared memory) takes it without timing anything."""

from __future__ import annotations

import json
from pathlib import Path

import pygpukit as gp
import pytest
from pygpukit.triton import autotune


@pytest.fixture
def tuner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("pygpukit_cuda")
    from pygpukit_cuda import cubin

    monkeypatch.setattr(autotune.availability, "interpret", lambda: False)
    monkeypatch.setattr(cubin, "is_capturing", lambda index: False)
    monkeypatch.setattr(autotune, "_device_name", lambda index: "Test GPU")
    monkeypatch.setattr(autotune, "_memory", {})
    monkeypatch.setattr(autotune, "_chosen", {})
    monkeypatch.setattr(autotune, "_loaded_from", None)
    return tmp_path


def test_the_fastest_candidate_is_chosen_and_stored(
    tuner: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    times = {"a": 3.0, "b": 1.0, "c": 2.0}
    ran: list[str] = []
    monkeypatch.setattr(autotune, "_time", lambda run: (run(), times[ran[-1]])[1])
    with gp.config.use(cache_dir=str(tuner)):
        best = autotune.choose("k", "shape1", 0, ["a", "b", "c"], ran.append)
        assert best == "b"
        stored = json.loads((tuner / "triton" / "autotune.json").read_text())
        assert list(stored.values()) == [1] and "k|shape1|Test GPU|" in next(iter(stored))
        # a fresh process: nothing in memory, the file answers and nothing is timed
        monkeypatch.setattr(autotune, "_chosen", {})
        monkeypatch.setattr(autotune, "_memory", {})
        monkeypatch.setattr(autotune, "_loaded_from", None)
        ran.clear()
        assert autotune.choose("k", "shape1", 0, ["a", "b", "c"], ran.append) == "b"
        assert ran == []


def test_a_failing_candidate_is_skipped_and_a_damaged_file_is_ignored(
    tuner: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tuner / "triton").mkdir()
    (tuner / "triton" / "autotune.json").write_text("{not json")

    def timed(run: object) -> float:
        raise RuntimeError("out of shared memory")

    monkeypatch.setattr(autotune, "_time", timed)
    with gp.config.use(cache_dir=str(tuner)):
        assert autotune.choose("k", "s", 0, ["a", "b"], lambda c: None) == "a"
    assert json.loads((tuner / "triton" / "autotune.json").read_text())
