"""cuBLASLt plans without a GPU: a fake library stands in for ``_native.CublasLt`` and its
MatmulPlans, so the plan cache, the workspace taken per call and the one-time timed trial
can be checked on any machine (gpu/test_matmul.py checks the products themselves)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit import _dtypes as dt
from pygpukit_cuda import cublaslt, device, plans, streams


class FakePlan:
    """A MatmulPlan whose candidate i costs `cost[i]` ms of fake device time."""

    def __init__(self, lib: FakeLt, workspace: list[int]) -> None:
        self.lib, self.workspace_sizes = lib, tuple(workspace)
        self.choice = 0

    @property
    def workspace_bytes(self) -> int:
        return self.workspace_sizes[self.choice]

    def choose(self, i: int) -> None:
        self.choice = i

    def run(self, i: int, stream: int, a: int, b: int, d: int, ws: int) -> None:
        self.lib.clock += self.lib.cost[i]
        self.lib.calls.append((a, b, d, i, ws, stream))

    def __call__(self, stream: int, a: int, b: int, d: int, ws: int = 0) -> None:
        self.run(self.choice, stream, a, b, d, ws)


class FakeLt:
    def __init__(self, cost: list[float], workspace: list[int] | None) -> None:
        self.cost, self.workspace = cost, workspace
        self.clock = 0.0
        self.calls: list[tuple[int, ...]] = []
        self.planned: list[tuple[Any, ...]] = []

    def plan(self, ctx: Any, *args: Any) -> FakePlan | None:
        self.planned.append(args)
        return None if self.workspace is None else FakePlan(self, self.workspace)


class FakeEvent:
    lib: FakeLt

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.t = 0.0

    def record(self, stream: Any = None) -> None:
        self.t = FakeEvent.lib.clock

    def synchronize(self) -> None:
        pass


class FakeBuffer:
    def __init__(self, ptr: int, nbytes: int) -> None:
        self.ptr, self.nbytes = ptr, nbytes


class FakePool:
    def __init__(self) -> None:
        self.given: list[tuple[int, int]] = []

    def allocate(self, nbytes: int, stream: int = 0) -> FakeBuffer:
        self.given.append((nbytes, stream))
        return FakeBuffer(0x7000_0000 + 0x1000 * len(self.given), nbytes)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    def make(cost: list[float], workspace: list[int] | None = None,
             trial: bool = True) -> tuple[FakeLt, FakePool]:  # fmt: skip
        monkeypatch.setenv("PYGPUKIT_CUBLASLT_TRIAL", "1" if trial else "0")
        monkeypatch.setattr(cublaslt, "TRIAL_SMALL_FLOPS", 2 * 64**3)
        lib = FakeLt(cost, [0] * len(cost) if workspace is None else workspace)
        FakeEvent.lib = lib
        monkeypatch.setattr(streams, "Event", FakeEvent)
        monkeypatch.setattr(streams, "get_elapsed_time", lambda s, e: e.t - s.t)
        pool = FakePool()
        monkeypatch.setattr(device, "allocator", lambda index: pool)
        monkeypatch.setattr(device, "context", lambda index: None)
        monkeypatch.setattr(cublaslt, "_plans", plans.PlanCache("test", 4096))
        monkeypatch.setattr(cublaslt, "_flush_buffer", lambda index: "flush")
        # a flush is an entry among the runs; it costs fake time that no event pair sees
        monkeypatch.setattr(cublaslt, "_flush", lambda buf: lib.calls.append((buf,)))
        return lib, pool

    return make


def plan_of(lib: FakeLt, n: int, ptrs: tuple[int, int, int] = (0x100, 0x200, 0x300)) -> Any:
    a, b, c = ptrs
    return cublaslt.plan_for(lib, 0, dt.float32, True, n, n, n, a, (n, 1), b, (n, 1), c)


def test_plans_are_cached_per_problem_and_alignment(fake: Any) -> None:
    lib, _ = fake([1.0, 0.5], trial=False)
    plan = plan_of(lib, 64)
    assert plan is plan_of(lib, 64, (0x1100, 0x1200, 0x1300))  # same alignments: cached
    assert len(lib.planned) == 1
    types, a, b, out, aligns, ws, candidates, like = lib.planned[0]
    assert like is None and a == (cublaslt.OP_N, 64, 64, 64, 0) and b == a
    assert types == (0, 0, cublaslt.COMPUTE_32F_FAST_TF32)
    assert (out, aligns) == ((64, 64, 1, 64 * 64), (256, 256, 256))
    assert (ws, candidates) == (cublaslt.WORKSPACE_BYTES, cublaslt.HEURISTIC_RESULTS)
    plan_of(lib, 64, (0x104, 0x200, 0x300))  # a 4-byte aligned operand: a plan of its own
    assert len(lib.planned) == 2 and lib.planned[1][4] == (256, 4, 256)


def test_a_plan_like_another_is_made_each_time_and_not_cached(fake: Any) -> None:
    lib, _ = fake([1.0, 0.5], trial=False)
    whole = plan_of(lib, 64)

    def row_slice() -> Any:  # 32 rows of the 64-row product, pinned to its algorithm
        return cublaslt.plan_for(lib, 0, dt.float32, True, 32, 64, 64, 0x100, (64, 1), 0x200,
                                 (64, 1), 0x300, like=whole)  # fmt: skip

    first, again = row_slice(), row_slice()
    assert first is not again and len(lib.planned) == 3
    assert lib.planned[1][-1] is whole and lib.planned[2][-1] is whole
    assert lib.planned[1][3] == (64, 32, 1, 64 * 32)  # the slice's own shape
    assert plan_of(lib, 64) is whole and len(lib.planned) == 3  # the whole one stays cached


def test_run_takes_workspace_on_the_current_stream_per_call(fake: Any) -> None:
    lib, pool = fake([1.0], [4096], trial=False)
    plan = plan_of(lib, 64)
    product = cublaslt.Product(plan, 0)
    product(0x100, 0x200, 0x300)
    product(0x400, 0x500, 0x600)
    assert pool.given == [(4096, 0), (4096, 0)]
    # cuBLASLt's operand order: b^T a^T
    assert [c[:4] for c in lib.calls] == [(0x200, 0x100, 0x300, 0), (0x500, 0x400, 0x600, 0)]
    assert all(c[4] for c in lib.calls)  # a workspace pointer each time


def test_no_workspace_no_allocation(fake: Any) -> None:
    lib, pool = fake([1.0], [0], trial=False)
    cublaslt.Product(plan_of(lib, 64), 0)(1, 2, 3)
    assert not pool.given and lib.calls[0][4] == 0


def test_trial_keeps_the_fastest_candidate_once(fake: Any) -> None:
    lib, _ = fake([1.0, 0.9, 0.5, 0.7], [0, 4096, 4096, 0])
    plan = plan_of(lib, 4096)
    assert plan.choice == 2
    n = len(lib.calls)
    plan_of(lib, 4096)  # cached: no second trial
    assert len(lib.calls) == n


def test_trial_flushes_l2_before_each_timed_run(fake: Any) -> None:
    lib, _ = fake([1.0, 0.9])
    plan_of(lib, 4096)
    # per candidate: a warm-up run, then (flush, timed run) pairs: a run follows a run only
    # where the candidate changes (the next one's warm-up)
    for prev, call in zip(lib.calls, lib.calls[1:], strict=False):
        if len(prev) > 1 and len(call) > 1:
            assert prev[3] != call[3], lib.calls
    flushes = sum(c == ("flush",) for c in lib.calls)
    assert flushes == 1 + 2 * cublaslt.TRIAL_REPEATS  # t0 alone, then each candidate's reps


def test_trial_keeps_the_heuristic_order_on_near_ties(fake: Any) -> None:
    lib, _ = fake([1.0, 0.97])
    assert plan_of(lib, 4096).choice == 0


def test_trial_cost_is_bounded_for_slow_products(fake: Any) -> None:
    lib, _ = fake([cublaslt.TRIAL_BUDGET_MS / 3] * 8)
    plan_of(lib, 8192)
    assert lib.clock <= 2.5 * cublaslt.TRIAL_BUDGET_MS, lib.clock
    lib2, _ = fake([cublaslt.TRIAL_BUDGET_MS] * 8)
    assert plan_of(lib2, 8192).choice == 0
    runs = [c for c in lib2.calls if len(c) > 1]
    assert len(runs) == 2  # warm-up and one timed run: no other candidate


@pytest.mark.parametrize("n", [64, 4096])
def test_trial_off(fake: Any, n: int) -> None:
    lib, _ = fake([1.0, 0.5], trial=False)
    assert plan_of(lib, n).choice == 0 and not lib.calls


@pytest.mark.parametrize("n,trial", [(32, True), (64, True), (128, False), (4096, False)])
def test_trial_auto_times_small_products_only(fake: Any, monkeypatch: pytest.MonkeyPatch,
                                              n: int, trial: bool) -> None:  # fmt: skip
    lib, _ = fake([1.0, 0.5])
    monkeypatch.delenv("PYGPUKIT_CUBLASLT_TRIAL")  # the default: auto
    assert plan_of(lib, n).choice == (1 if trial else 0)
    assert bool(lib.calls) is trial


def test_no_usable_algorithm_gives_no_plan(fake: Any) -> None:
    lib, _ = fake([1.0], trial=False)
    lib.workspace = None  # the heuristic finds nothing usable
    assert plan_of(lib, 64) is None
    assert plan_of(lib, 64) is None and len(lib.planned) == 1  # remembered as None
