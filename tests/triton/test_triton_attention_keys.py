"""The attention launcher on the host (its program and tuner stubbed): each dtype and head
width tunes under its own key, from the list for its width; each schedule's grid (pair: half
the query programs; snake, zip: one axis of every head's blocks) and the SM count it
snakes by; a steady call neither tunes nor builds a new launch (it runs the layout's kept
plan)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest

pytest.importorskip("pygpukit_cuda")
ka = pytest.importorskip("pygpukit.triton.kernels.attention")


class Recorder:
    def __init__(self, pick: int = 0) -> None:
        self.pick = pick
        self.keys: list[tuple[str, tuple[Any, ...]]] = []
        self.launches: list[tuple[tuple[int, ...], dict[str, Any], int, int]] = []

    def choose(self, name: str, key: str, index: int, cands: Any, launch: Any) -> Any:
        self.keys.append((key, tuple(cands)))
        return cands[self.pick]

    def __call__(self, grid: tuple[int, ...], args: Any, types: Any, consts: Any,
                 num_warps: int = 4, num_stages: int = 2) -> None:  # fmt: skip
        self.launches.append((grid, dict(consts), num_warps, num_stages))

    def bound(self, cache: dict[Any, Any], key: Any, grid: tuple[int, ...], args: Any,
              types: Any, consts: Any, slots: Any, num_warps: int = 4,
              num_stages: int = 2) -> Any:  # fmt: skip
        """The kept plan of a settled layout: each call records the launch it stands for."""
        assert tuple(slots) == (0, 1, 2, 3)  # the four pointers, nothing else per call

        def plan(stream: Any, *pointers: int) -> None:
            assert len(pointers) == 4
            self.launches.append((grid, dict(consts), num_warps, num_stages))

        cache[key] = plan
        return plan


def _qkv(dtype: str, d: int, s: int = 2048) -> list[gp.GPUArray]:
    x = gp.asarray(np.zeros((1, 16, s, d), np.float32)).astype(dtype)
    return [x, x, x, gp.asarray(np.zeros((1, 16, s, d), np.float32)).astype(dtype)]


def test_keys_are_distinct_per_dtype_and_head_dim(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder()
    monkeypatch.setattr(ka, "_program", rec)
    monkeypatch.setattr(ka.autotune, "choose", rec.choose)
    monkeypatch.setattr(ka, "interpret", lambda: False)
    monkeypatch.setattr(ka, "_wave", lambda out: 132)
    for dtype in ("bfloat16", "float16"):
        for d in (64, 128):
            ka.sdpa_causal(*_qkv(dtype, d, 256), 0.125)
    keys = [k for k, _ in rec.keys]
    assert len(set(keys)) == 4, keys
    lists = {k: c for k, c in rec.keys}
    assert all(lists[k] == tuple(ka.CONFIGS_D64) for k in keys if "|64|64|" in k)
    assert all(lists[k] == tuple(ka.CONFIGS_D128) for k in keys if "|128|128|" in k)
    assert {k.split("|")[1] for k in keys} == {"bfloat16", "float16"}


@pytest.mark.parametrize(
    ("sched", "grid"),
    [("heavy", (16, 17)), ("pair", (16, 9)), ("snake", (16 * 17,)), ("zip", (16 * 17,))],
)
def test_each_schedule_has_its_grid(monkeypatch: pytest.MonkeyPatch, sched: str,
                                    grid: tuple[int, ...]) -> None:  # fmt: skip
    rec = Recorder()
    monkeypatch.setattr(ka, "_program", rec)
    monkeypatch.setattr(ka, "interpret", lambda: False)
    monkeypatch.setattr(ka, "_wave", lambda out: 132)
    config = (128, 64, 8, 3, sched, False)
    monkeypatch.setattr(ka.autotune, "choose", lambda n, k, i, c, launch: config)
    ka.sdpa_causal(*_qkv("float16", 64, 2048 + 1), 0.125)  # 17 query blocks: one left alone
    got, consts, warps, stages = rec.launches[-1]
    assert got == grid and consts["SCHED"] == ka.SCHEDULES[sched]
    assert (warps, stages) == (8, 3)


def test_snake_waves_are_the_sm_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """W (the argument after the value head width) is the GPU's SM count."""
    args_seen: list[Any] = []
    monkeypatch.setattr(ka, "_program", lambda grid, args, *rest, **kw: args_seen.append(args))
    monkeypatch.setattr(ka, "interpret", lambda: False)
    monkeypatch.setattr("pygpukit_cuda.device_facts.sm_count", lambda index: 77)
    config = (64, 64, 4, 3, "snake", True)
    monkeypatch.setattr(ka.autotune, "choose", lambda n, k, i, c, launch: config)
    ka.sdpa_causal(*_qkv("bfloat16", 64, 256), 0.125)
    assert args_seen[-1][10] == 77


def test_an_explicit_config_skips_the_tuner(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder()
    monkeypatch.setattr(ka, "_program", rec)
    monkeypatch.setattr(ka, "interpret", lambda: False)
    monkeypatch.setattr(ka, "_wave", lambda out: 132)

    def refuse(*args: Any) -> None:
        raise AssertionError("tuned")

    monkeypatch.setattr(ka.autotune, "choose", refuse)
    ka.sdpa_causal(*_qkv("float16", 128, 256), 0.125, (64, 64, 4, 2, "zip", True))
    grid, consts, warps, stages = rec.launches[-1]
    assert grid == (16 * 4,) and consts["BM"] == 64 and (warps, stages) == (4, 2)
    assert consts["LAZY"] is True


def test_every_candidate_is_a_six_tuple_and_the_lists_are_small() -> None:
    for configs in (ka.CONFIGS_D64, ka.CONFIGS_D128, ka.CONFIGS_F32, ka.CONFIGS_WIDE):
        assert 1 <= len(configs) <= 8  # each compiles once before any is timed
        assert len(set(configs)) == len(configs)
        for bm, bn, warps, stages, sched, lazy in configs:
            assert bm in (32, 64, 128) and bn in (32, 64, 128) and sched in ka.SCHEDULES
            assert isinstance(lazy, bool)
            assert warps in (4, 8) and 2 <= stages <= 4


def test_a_steady_call_launches_once_and_tunes_no_more(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from pygpukit_cuda import cubin

    rec = Recorder()
    tuner = ka.autotune
    monkeypatch.setattr(ka, "_program", rec)
    monkeypatch.setattr(ka, "interpret", lambda: False)
    monkeypatch.setattr(ka, "_wave", lambda out: 132)
    monkeypatch.setattr(tuner.availability, "interpret", lambda: False)
    monkeypatch.setattr(cubin, "is_capturing", lambda index: False)
    monkeypatch.setattr(tuner, "_device_name", lambda index: "Test GPU")
    monkeypatch.setattr(tuner, "_memory", {})
    monkeypatch.setattr(tuner, "_chosen", {})
    monkeypatch.setattr(tuner, "_loaded_from", None)
    monkeypatch.setattr(tuner, "_time", lambda run, count: (run(), 0.04 * count)[1])
    monkeypatch.setattr(ka, "stream", lambda index: 0)
    monkeypatch.setattr(ka, "_plans", {})
    args = _qkv("float16", 64, 256)
    with gp.config.use(cache_dir=str(tmp_path)):
        ka.sdpa_causal(*args, 0.125)
        assert len(rec.launches) > len(ka.CONFIGS_D64)  # tuned: every candidate ran
        rec.launches.clear()
        for _ in range(10):
            ka.sdpa_causal(*args, 0.125)
    assert len(rec.launches) == 10 and len({repr(x) for x in rec.launches}) == 1
    assert len(ka._plans) == 1  # the layout's plan, kept after the tuner settled
