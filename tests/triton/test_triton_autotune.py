"""Autotuning keeps each problem's winner on disk under the cache_dir setting, so a second
process (here: a cleared memory) takes it without timing anything; a stored choice names
the candidate list it indexes; every candidate compiles before any is timed, and a noisy
window does not decide."""

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


def _fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autotune, "_chosen", {})
    monkeypatch.setattr(autotune, "_memory", {})
    monkeypatch.setattr(autotune, "_loaded_from", None)


class FakeGPU:
    """Launches record what ran; `_time` answers each candidate's per-launch time times
    `count`, times `slow` for the windows listed in `disturbed` (window numbers)."""

    def __init__(self, per_launch: dict[str, float], disturbed: dict[int, float] | None = None):
        self.per_launch = per_launch
        self.disturbed = disturbed or {}
        self.events: list[tuple[str, str]] = []
        self.windows = 0
        #: the candidates whose windows were disturbed
        self.hit: list[str] = []

    def launch(self, c: str) -> None:
        self.events.append(("launch", c))

    def time(self, run: object, count: int) -> float:
        run()  # type: ignore[operator]
        c = self.events[-1][1]
        self.events.append(("timed", c))
        self.windows += 1
        if self.windows in self.disturbed:
            self.hit.append(c)
        return self.per_launch[c] * count * self.disturbed.get(self.windows, 1.0)


def test_the_fastest_candidate_is_chosen_and_stored(
    tuner: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = FakeGPU({"a": 3.0, "b": 1.0, "c": 2.0})
    monkeypatch.setattr(autotune, "_time", gpu.time)
    with gp.config.use(cache_dir=str(tuner)):
        best = autotune.choose("k", "shape1", 0, ["a", "b", "c"], gpu.launch)
        assert best == "b"
        stored = json.loads((tuner / "triton" / "autotune.json").read_text())
        ((full, entry),) = stored.items()
        assert full.startswith("k|shape1|" + autotune.fingerprint(["a", "b", "c"]) + "|Test GPU|")
        assert entry["pick"] == 1 and entry["config"] == "'b'"
        assert entry["ms"] == [3.0, 1.0, 2.0]  # what each candidate took, for a post-mortem
        assert autotune.table() == stored
        # a fresh process: nothing in memory, the file answers and nothing is timed
        _fresh_process(monkeypatch)
        gpu.events.clear()
        assert autotune.choose("k", "shape1", 0, ["a", "b", "c"], gpu.launch) == "b"
        assert gpu.events == []


def test_a_stored_choice_is_reused_without_tuning_again(
    tuner: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steady state: after the first call, a choice is a dict lookup (no launch, no timing:
    a re-tune inside a benchmark's timed loop would cost seconds)."""
    gpu = FakeGPU({"a": 2.0, "b": 1.0})
    monkeypatch.setattr(autotune, "_time", gpu.time)
    with gp.config.use(cache_dir=str(tuner)):
        autotune.choose("k", "s", 0, ["a", "b"], gpu.launch)
        gpu.events.clear()

        def no_tuning(*args: object) -> None:
            raise AssertionError("tuned again")

        monkeypatch.setattr(autotune, "tune", no_tuning)
        for _ in range(100):
            assert autotune.choose("k", "s", 0, ["a", "b"], gpu.launch) == "b"
    assert gpu.events == []


def test_a_changed_candidate_list_tunes_again(tuner: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stored index belongs to one list: the same problem key with a reordered or
    pruned list must not take whatever now sits at that index (the attention lists changed
    three times under one key, "v2|...", and an old index then named another config)."""
    gpu = FakeGPU({"fast": 1.0, "slow": 4.0, "mid": 2.0})
    monkeypatch.setattr(autotune, "_time", gpu.time)
    with gp.config.use(cache_dir=str(tuner)):
        assert autotune.choose("k", "s", 0, ["slow", "fast"], gpu.launch) == "fast"
        _fresh_process(monkeypatch)
        assert autotune.choose("k", "s", 0, ["fast", "slow", "mid"], gpu.launch) == "fast"
        assert len(autotune.table()) == 2
    assert autotune.fingerprint(["a", "b"]) != autotune.fingerprint(["b", "a"])


def test_every_candidate_compiles_before_any_is_timed_and_one_slow_window_does_not_decide(
    tuner: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiles leave the GPU idle (clocks drop): timing a candidate right after its own
    compile, in one short window, let a 4x slower configuration win. Here the best
    candidate's first timed window is disturbed 5x; interleaved rounds keep its best."""
    gpu = FakeGPU({"a": 1.5, "b": 1.0, "c": 2.0})
    monkeypatch.setattr(autotune, "_time", gpu.time)
    # windows: 3 calibration ones (a, b, c), then warm-up ones of "a", then the rounds
    warm = int(autotune.WARM_MS // (1.5 * int(autotune.WINDOW_MS / 1.5 + 3))) + 1
    first_round_b = 3 + warm + 2
    gpu.disturbed = {first_round_b: 5.0}
    with gp.config.use(cache_dir=str(tuner)):
        assert autotune.choose("k", "s", 0, ["a", "b", "c"], gpu.launch) == "b"
    first_timed = next(i for i, e in enumerate(gpu.events) if e[0] == "timed")
    compiled = {c for kind, c in gpu.events[:first_timed] if kind == "launch"}
    assert compiled == {"a", "b", "c"}
    assert gpu.hit == ["b"]  # the disturbance did land on the best candidate
    timed = [c for kind, c in gpu.events if kind == "timed"]
    assert timed.count("b") == 1 + autotune.ROUNDS  # calibration, then one per round


def test_a_failing_candidate_is_skipped_and_a_damaged_file_is_ignored(
    tuner: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tuner / "triton").mkdir()
    (tuner / "triton" / "autotune.json").write_text("{not json")

    def launch(c: str) -> None:
        if c == "a":
            raise RuntimeError("out of shared memory")

    monkeypatch.setattr(autotune, "_time", lambda run, count: (run(), 1.0 * count)[1])
    with gp.config.use(cache_dir=str(tuner)):
        assert autotune.choose("k", "s", 0, ["a", "b"], launch) == "b"
    entry = next(iter(json.loads((tuner / "triton" / "autotune.json").read_text()).values()))
    assert entry["pick"] == 1 and entry["ms"][0] is None


def test_an_old_table_of_bare_indices_is_ignored(
    tuner: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tuner / "triton").mkdir()
    (tuner / "triton" / "autotune.json").write_text(json.dumps({"k|s|x|Test GPU|ok": 0}))
    with gp.config.use(cache_dir=str(tuner)):
        assert autotune.table() == {}
