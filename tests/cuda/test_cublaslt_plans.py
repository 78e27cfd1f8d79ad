"""cuBLASLt plans without a GPU: a fake library records what `Lt` asks for, so the plan's
prebuilt arguments, the one-time timed trial and the shared workspace can be checked on
any machine (the GPU tests in gpu/test_matmul.py check the products themselves)."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit import _dtypes as dt
from pygpukit_cuda import cublaslt, device, streams


class FakeLt:
    """The entry points Lt uses. Algorithm i runs in `cost[i]` ms of fake device time."""

    def __init__(self, cost: list[float], workspace: list[int]) -> None:
        self.cost, self.workspace = cost, workspace
        self.clock = 0.0
        self.calls: list[tuple[Any, ...]] = []
        self.next_handle = 0x1000
        for name in ("cublasLtMatmulDescSetAttribute", "cublasLtMatrixLayoutSetAttribute",
                     "cublasLtMatmulPreferenceSetAttribute",
                     "cublasLtMatmulPreferenceDestroy"):  # fmt: skip
            setattr(self, name, _Fn(lambda *a: 0))
        for name in ("cublasLtCreate", "cublasLtMatmulDescCreate", "cublasLtMatrixLayoutCreate",
                     "cublasLtMatmulPreferenceCreate"):  # fmt: skip
            setattr(self, name, _Fn(self._create))
        self.cublasLtMatmulAlgoGetHeuristic = _Fn(self._heuristic)
        self.cublasLtMatmul = _Fn(self._matmul)
        self.cublasLtGetVersion = _Fn(lambda: 130100)
        self.cublasLtGetStatusString = _Fn(lambda s: b"FAKE_ERROR")

    def _create(self, out: Any, *args: Any) -> int:
        self.next_handle += 0x10
        out._obj.value = self.next_handle
        return 0

    def _heuristic(self, *args: Any) -> int:
        requested, results, count = args[7], args[8], args[9]
        n = min(requested, len(self.cost))
        for i in range(n):
            results[i].algo[0] = i
            results[i].state = 0
            results[i].workspace_size = self.workspace[i]
        count._obj.value = n
        return 0

    def _matmul(self, *args: Any) -> int:
        algo = args[12]._obj[0]
        self.clock += self.cost[algo]
        self.calls.append((args[3], args[5], args[8], algo, args[13], args[14], args[15]))
        return 0


class _Fn:
    """A callable that accepts ctypes' argtypes/restype assignments."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


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
        self.block = type("B", (), {"capacity": nbytes + 512})()


class FakeAllocator:
    def __init__(self) -> None:
        self.given: list[FakeBuffer] = []

    def allocate(self, nbytes: int) -> FakeBuffer:
        buf = FakeBuffer(0x7000_0000 + 0x1000_0000 * len(self.given), nbytes)
        self.given.append(buf)
        return buf


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    def make(cost: list[float], workspace: list[int] | None = None) -> tuple[Any, FakeLt, Any]:
        monkeypatch.setenv("PYGPUKIT_CUBLASLT_TRIAL", "1")
        lib = FakeLt(cost, workspace or [0] * len(cost))
        FakeEvent.lib = lib
        monkeypatch.setattr(streams, "Event", FakeEvent)
        monkeypatch.setattr(streams, "get_elapsed_time", lambda s, e: e.t - s.t)
        alloc = FakeAllocator()
        monkeypatch.setattr(device, "allocator", lambda index: alloc)
        lt = cublaslt.Lt(lib, "fake")  # type: ignore[arg-type]
        monkeypatch.setattr(cublaslt, "_lib", lt)
        monkeypatch.setattr(cublaslt, "_tried", True)
        return lt, lib, alloc

    return make


def plan_of(lt: Any, n: int, dtype: dt.DataType = dt.float32, tf32: bool = True) -> Any:
    op = cublaslt.Operand(cublaslt._OP_N, n, n, n)
    key = (0, dtype.name, cublaslt.compute_type(dtype, tf32), op, op, n, n, n, 1, 0, 0,
           (256,) * 4)  # fmt: skip
    return lt.plan(0, key)


def test_plan_prebuilds_its_arguments_and_runs_with_new_pointers(fake: Any) -> None:
    lt, lib, alloc = fake([1.0, 0.5], [0, 1 << 20])
    plan = plan_of(lt, 64)  # small: no trial, the heuristic's first
    assert plan is not None and not plan.pending and len(plan.choices) == 2
    for ptrs in [(0x100, 0x200, 0x300), (0x1100, 0x1200, 0x1300)]:
        lt.run(0, plan, *ptrs)
    assert [c[:4] for c in lib.calls] == [(0x100, 0x200, 0x300, 0), (0x1100, 0x1200, 0x1300, 0)]
    assert not alloc.given  # algorithm 0 asks for no workspace
    assert plan_of(lt, 64) is plan  # cached


def test_trial_keeps_the_fastest_candidate_and_runs_once(fake: Any) -> None:
    lt, lib, alloc = fake([1.0, 0.9, 0.5, 0.7], [0, 4096, 4096, 0])
    plan = plan_of(lt, 4096)
    assert plan.pending
    lt.run(0, plan, 0x100, 0x200, 0x300)
    assert plan.choice == 2 and not plan.pending
    assert lib.calls[-1][3] == 2  # the real product ran with the winner
    n = len(lib.calls)
    lt.run(0, plan, 0x400, 0x500, 0x600)
    assert len(lib.calls) == n + 1 and lib.calls[-1][:4] == (0x400, 0x500, 0x600, 2)
    # one shared workspace for the default stream, of the full size, reused by every call
    assert len(alloc.given) == 1 and alloc.given[0].nbytes == cublaslt.WORKSPACE_BYTES
    assert {c[4] for c in lib.calls if c[5]} == {alloc.given[0].ptr}


def test_trial_keeps_the_heuristic_order_on_near_ties(fake: Any) -> None:
    lt, _lib, _ = fake([1.0, 0.97])
    plan = plan_of(lt, 4096)
    lt.run(0, plan, 1, 2, 3)
    assert plan.choice == 0


def test_trial_cost_is_bounded_for_slow_products(fake: Any) -> None:
    slow = cublaslt.TRIAL_BUDGET_MS / 3
    lt, lib, _ = fake([slow] * 8)
    plan = plan_of(lt, 8192)
    lt.run(0, plan, 1, 2, 3)
    assert lib.clock <= 2.5 * cublaslt.TRIAL_BUDGET_MS, lib.clock
    lt2, lib2, _ = fake([cublaslt.TRIAL_BUDGET_MS] * 8)
    plan2 = plan_of(lt2, 8192)
    lt2.run(0, plan2, 1, 2, 3)
    assert len(lib2.calls) == 3  # warm-up, one timed run, the product: no other candidate
    assert plan2.choice == 0


@pytest.mark.parametrize("setting", [None, "0"])
def test_trial_is_off_unless_asked(fake: Any, monkeypatch: pytest.MonkeyPatch,
                                   setting: str | None) -> None:  # fmt: skip
    lt, lib, _ = fake([1.0, 0.5])
    if setting is None:
        monkeypatch.delenv("PYGPUKIT_CUBLASLT_TRIAL")
    else:
        monkeypatch.setenv("PYGPUKIT_CUBLASLT_TRIAL", setting)
    plan = plan_of(lt, 4096)
    lt.run(0, plan, 1, 2, 3)
    assert not plan.trial_ms and len(lib.calls) == 1 and plan.choice == 0


def test_workspace_counts_as_cached_and_is_released(fake: Any) -> None:
    lt, _lib, alloc = fake([1.0], [4096])
    plan = plan_of(lt, 64)
    lt.run(0, plan, 1, 2, 3)
    held = alloc.given[0].block.capacity
    stats = {"used": held + 100, "cached": 7}
    cublaslt.account_workspace(0, stats)
    assert stats == {"used": 100, "cached": 7 + held, "cublaslt_workspace": held}
    assert cublaslt.release_workspace(0) == held
    stats = {"used": 100, "cached": 7}
    cublaslt.account_workspace(0, stats)
    assert stats == {"used": 100, "cached": 7, "cublaslt_workspace": 0}
    lt.run(0, plan, 1, 2, 3)  # a new block after the release
    assert len(alloc.given) == 2


def test_no_usable_algorithm_gives_no_plan(fake: Any) -> None:
    lt, _lib, _ = fake([1.0], [cublaslt.WORKSPACE_BYTES + 1])
    assert plan_of(lt, 64) is None


def test_heuristic_results_structure_matches_the_header() -> None:
    # cublasLtMatmulHeuristicResult_t: algo (64 bytes), size_t, status, float, int[4]
    assert ctypes.sizeof(cublaslt._HeuristicResult) == 96
