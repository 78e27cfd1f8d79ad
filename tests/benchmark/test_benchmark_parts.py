"""The benchmark's parts: sizes, statistics, the result check, peers that cannot run,
the markdown table and the comparison of runs."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.benchmark import cases as C
from pygpukit.benchmark.peers import NumpyPeer, TorchPeer, make_peers
from pygpukit.benchmark.report import changes, markdown_table
from pygpukit.benchmark.results import PASS, PeerResult, Row, Run
from pygpukit.benchmark.runner import Bench, compare, run_array_case
from pygpukit.benchmark.special import FLOOR, note_issue_time
from pygpukit.benchmark.timing import (
    ISSUE_CALLS,
    Clock,
    Rotation,
    Stats,
    copies_for,
    issue_us,
    measure,
    per_call_interleaved,
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "value"),
    [("4096", 4096), ("2^20", 2**20), ("2**10", 1024), ("1M", 2**20), ("3k", 3072)],
)
def test_parse_size(text: str, value: int) -> None:
    assert C.parse_size(text) == value


def test_sizes_override_and_labels() -> None:
    sizes = C.Sizes.preset("cuda", quick=False)
    assert sizes.vector == [2**20, 2**28] and sizes.matmul == [1024, 4096, 8192]
    sizes.override("matmul=512,2^10")
    assert sizes.matmul == [512, 1024]
    with pytest.raises(ValueError, match="KEY=V1,V2"):
        sizes.override("matmul")
    with pytest.raises(ValueError, match="positive"):
        sizes.override("rows=0")
    assert C.size_label(2**28) == "2^28" and C.size_label(1000) == "1000"


def test_stats_median_quartiles_and_spread() -> None:
    s = Stats.of([4.0, 1.0, 2.0, 3.0, 5.0], inner=10)
    assert (s.min_ms, s.p25_ms, s.median_ms, s.p75_ms, s.max_ms) == (1, 2, 3, 4, 5)
    assert s.spread_pct == pytest.approx(200 / 3)
    assert s.samples == 5 and s.inner == 10
    one = Stats.of([2.0])
    assert one.p25_ms == one.p75_ms == 2.0 and one.spread_pct == 0
    with pytest.raises(ValueError):
        Stats.of([])


class CountingClock(Clock):
    """A host clock that counts calls (no assertion on time is made with it)."""

    def __init__(self) -> None:
        self.calls = 0

    def time(self, fn, count):  # type: ignore[no-untyped-def]
        self.calls += count
        return super().time(fn, count)


def test_measure_warms_up_batches_and_stops_at_repeats() -> None:
    clock = CountingClock()
    hits = []
    stats = measure(lambda: hits.append(1), clock, repeats=4, warmup=3, budget_s=60)
    assert stats.samples == 4 and stats.inner >= 1
    assert len(hits) == 3 + 1 + 4 * stats.inner  # warm-up, the calibrating call, samples


def test_interleaved_samples_take_turns_and_each_settles_first() -> None:
    order: list[str] = []
    syncs: list[str] = []
    contestants = [
        (lambda: order.append("a"), lambda: syncs.append("a")),
        (lambda: order.append("b"), lambda: syncs.append("b")),
    ]
    stats = per_call_interleaved(contestants, 7, warmup=1, repeats=4, budget_s=60,
                                 settle_s=0.01)  # fmt: skip
    assert [s.samples for s in stats] == [4, 4] and stats[0].inner == 7
    timed = order[-4 * 2 * 7 :]  # after the warm-up and settling runs
    assert timed == (["a"] * 7 + ["b"] * 7) * 4
    first_b = order.index("b")
    assert order[:first_b] == ["a"] * first_b and first_b > 100  # a settled before b began
    assert syncs[-16:] == ["a", "a", "b", "b"] * 4  # each sample syncs its own library


def test_issue_time_counts_the_calls_but_not_the_sync() -> None:
    order: list[str] = []

    def slow_call() -> None:  # 50 us of host work a call
        order.append("b")
        end = time.perf_counter() + 5e-5
        while time.perf_counter() < end:
            pass

    def slow_sync() -> None:  # a device wait of 100 ms: 1560 us a call, were it counted
        time.sleep(0.1)

    contestants = [(lambda: order.append("a"), slow_sync), (slow_call, slow_sync)]
    fast, slow = issue_us(contestants, rounds=3)
    assert order == (["a"] * ISSUE_CALLS + ["b"] * ISSUE_CALLS) * 3  # turns, as in a sample
    assert 50 <= slow < 1000  # the calls' own 50 us each, without the sync's share
    assert fast < 100


def _busy(us: float) -> Callable[[], None]:
    def call() -> None:
        end = time.perf_counter() + us * 1e-6
        while time.perf_counter() < end:
            pass

    return call


def test_issue_time_note_puts_ours_beside_the_launch_floor() -> None:
    """A tiny row's note gives the floor (the bare launch, timed in the same turns) and how
    far ours is over it; the figures in the note are those in the row's extra."""
    row = Row("tiny", "add", "1 element", unit="us/call", tol=0.0)
    peer = PeerResult("torch")
    timed = [(row, _busy(60), lambda: None), (peer, _busy(5), lambda: None)]
    note_issue_time(row, timed, (_busy(25), lambda: None))
    got = row.extra["issue_us"]
    assert list(got) == ["ours", "torch", FLOOR]
    assert 25 <= got[FLOOR] < got["ours"]
    assert f"{FLOOR} {got[FLOOR]:.2f}, ours {got['ours'] - got[FLOOR]:+.2f} over it" in row.note
    assert row.note.startswith(f"host time alone (us/call, {ISSUE_CALLS} calls): ours ")


def test_issue_time_note_without_ours_gives_the_floor_alone() -> None:
    row = Row("tiny", "add", "1 element", unit="us/call", tol=0.0)
    row.note = "wrong result, not timed"
    note_issue_time(row, [(PeerResult("torch"), _busy(5), lambda: None)],
                    (_busy(5), lambda: None))  # fmt: skip
    assert list(row.extra["issue_us"]) == ["torch", FLOOR]
    assert row.note.startswith("wrong result, not timed; host time alone")
    assert "over it" not in row.note


def test_rotation_cycles_and_copies_cover_the_cache() -> None:
    r = Rotation([[1], [2], [3]])
    assert [r()[0] for _ in range(7)] == [1, 2, 3, 1, 2, 3, 1]
    assert copies_for(12 << 20, 50 << 20) == 17
    assert copies_for(3 << 30, 50 << 20) == 1
    assert copies_for(1, 50 << 20) == 64  # capped


def test_compare_catches_wrong_shapes_nans_and_single_bad_elements() -> None:
    want = C.Expected(np.arange(1.0, 9.0))
    assert compare(np.arange(1.0, 9.0, dtype=np.float32), want) == (0.0, "")
    bad = np.arange(1.0, 9.0)
    bad[5] = 0.0
    err, why = compare(bad, want)
    assert err == pytest.approx(6 / 8) and not why
    nan = np.arange(1.0, 9.0)
    nan[0] = np.nan
    assert compare(nan, want)[1] == "NaN in the result"
    assert "shape" in compare(np.zeros(3), want)[1]
    data = np.array([1.0, 7.0, 3.0, 7.0])
    assert compare(np.int64(3), C.Expected(data, how="argmax")) == (0.0, "")
    assert compare(np.int64(2), C.Expected(data, how="argmax"))[1] == "not a maximum"
    assert "not an index" in compare(np.float32(1), C.Expected(data, how="argmax"))[1]


def test_matmul_reference_samples_rows_of_large_products() -> None:
    a = np.random.default_rng(1).standard_normal((300, 8))
    b = np.random.default_rng(2).standard_normal((8, 5))
    want = C._matmul_reference(a, b)
    assert want.rows is not None and len(want.rows) == C.CHECK_ROWS
    assert compare(a @ b, want) == (pytest.approx(0.0), "")
    wrong = a @ b
    wrong[want.rows[7]] += 1.0
    assert compare(wrong, want)[0] > 0.01


def test_a_peer_that_cannot_load_leaves_a_note_in_the_row() -> None:
    """torch on a CPU-only machine (not installed, or no GPU) is a note, not a crash."""
    torch_peer = TorchPeer(0)
    if torch_peer.load():
        pytest.skip("torch with a CUDA GPU is present here")
    sizes = C.Sizes([2**10], [4], [64], [8], [10])
    (add,) = [c for c in C.elementwise(sizes) if c.op == "add"]
    bench = Bench(gp.Device("cpu"), [NumpyPeer(), torch_peer], repeats=2, budget_s=0.2)
    row = run_array_case(add, bench)
    assert row.status == PASS
    numpy_result, torch_result = row.peers
    assert numpy_result.stats is not None and numpy_result.ratio is not None
    assert torch_result.stats is None and torch_result.ratio is None
    assert "torch" in torch_result.note


def test_peers_match_the_device() -> None:
    assert [p.name for p in make_peers(["numpy"], "cpu", 0)] == ["numpy"]
    with pytest.raises(ValueError, match="on a GPU"):
        make_peers(["cupy"], "cpu", 0)
    with pytest.raises(ValueError, match="unknown peer"):
        make_peers(["jax"], "cuda", 0)


def test_markdown_table_is_ascii_and_escapes_pipes() -> None:
    text = markdown_table(["a", "b"], [["x|y", "\u00b5s"]])
    assert text.isascii()
    lines = text.splitlines()
    assert lines[0].startswith("| a") and set(lines[1]) <= {"|", "-", " "}
    assert "x/y" in lines[2] and "?s" in lines[2]


def _run(*rows: Row) -> Run:
    return Run({"device_name": "x"}, {}, list(rows))


def test_changes_verdicts() -> None:
    def row(case: str, ms: float, spread: float = 0.0) -> Row:
        stats = Stats(ms, ms * (1 - spread), ms * (1 + spread), ms, ms, 5, 1)
        return Row("f", "op", case, status=PASS, stats=stats)

    before = _run(row("a", 1.0), row("b", 1.0), row("c", 1.0, 0.2), row("d", 1.0),
                  row("gone", 1.0))  # fmt: skip
    after = _run(row("a", 2.0), row("b", 0.5), row("c", 1.1, 0.2), row("d", 1.02),
                 row("new", 1.0))  # fmt: skip
    verdicts = {c.key.split("/")[-1]: c.verdict for c in changes(before, after, 50)}
    assert verdicts == {"a": "REGRESSION", "b": "faster", "c": "within noise",
                        "d": "within noise", "new": "new", "gone": "not run now"}  # fmt: skip
    assert {c.key.split("/")[-1]: c.verdict for c in changes(before, after, None)}["a"] == "slower"
