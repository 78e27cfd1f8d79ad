"""When gp.Scheduler's SM reserve is made and which side each task stream lands on, with a
stand-in for the CUDA plugin (no GPU needed)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import pytest
from pygpukit import _sched_isolation as iso_mod
from pygpukit._sched_isolation import Isolation

_handles = itertools.count(0x1000)


class _Stream:
    def __init__(self, priority: int = 0, **_: Any) -> None:
        self.ptr, self.priority, self.side = next(_handles), priority, "all"


class _Partition:
    made = 0

    def __init__(self, sms: float, device: int) -> None:
        _Partition.made += 1
        self.reserved_sms, self.rest_sms = int(sms), 132 - int(sms)

    def check(self) -> None:
        return None

    def stream(self, side: str, priority: int) -> _Stream:
        s = _Stream(priority)
        s.side = side
        return s


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    cuda = SimpleNamespace(
        sm_partition_unavailable=lambda index: None,
        sm_layout=lambda index: {"sms": 132, "min_partition": 8, "alignment": 8},
        SmPartition=_Partition,
        stream_priority_range=lambda index: (0, -5),
        Stream=_Stream,
    )
    monkeypatch.setattr(iso_mod, "_cuda", lambda: cuda)
    _Partition.made = 0
    return cuda


GPU = SimpleNamespace(type="cuda", index=0)


def test_reserve_sms_reserves_before_any_task(fake_cuda):
    iso = Isolation(GPU, "auto", 32)  # type: ignore[arg-type]
    assert _Partition.made == 1 and iso.stats()["reserved_sms"] == 32
    hog = iso.stream("best_effort", 0)  # a best-effort task that starts first
    iso.prepare("guaranteed", 0.25)
    req = iso.stream("guaranteed", 10)
    assert _Partition.made == 1, "one reserve per scheduler"
    assert (iso.side_of(hog), iso.side_of(req)) == ("rest", "reserved")
    assert (hog.side, req.side) == ("rest", "reserved")
    assert iso.stats()["unreserved_tasks"] == 0
    iso.forget(hog)
    assert iso.side_of(hog) is None


def test_without_reserve_sms_early_tasks_keep_every_sm_and_are_counted(fake_cuda):
    iso = Isolation(GPU, "auto", None)  # type: ignore[arg-type]
    assert _Partition.made == 0, "sized from the first guaranteed task: not made yet"
    hog = iso.stream("best_effort", 0)
    iso.prepare("guaranteed", 0.25)
    req = iso.stream("guaranteed", 10)
    late = iso.stream("burstable", 0)
    assert iso.stats()["reserved_sms"] == 33  # 0.25 of 132 (the stand-in does not round)
    assert [iso.side_of(s) for s in (hog, req, late)] == ["all", "reserved", "rest"]
    assert iso.stats()["unreserved_tasks"] == 1


def test_priority_mode_never_reserves(fake_cuda):
    iso = Isolation(GPU, "priority", 32)  # type: ignore[arg-type]
    iso.prepare("guaranteed", 0.5)
    s = iso.stream("best_effort", 0)
    assert _Partition.made == 0 and iso.side_of(s) == "all"
    assert iso.stats()["unreserved_tasks"] == 0  # nothing was to be reserved
