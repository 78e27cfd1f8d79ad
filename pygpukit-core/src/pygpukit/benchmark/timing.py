"""Timing device work: clocks that wait for the device, and a median-of-samples measurement.

A `Clock` times `count` back-to-back calls of a function and returns the milliseconds they
took *on the device*: the host clock after a synchronize on the CPU, device events on a
GPU. `measure` warms up, picks how many calls one sample holds (so that a sample is long
enough to time), takes repeated samples and summarizes them as a `Stats`.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

#: a sample should last at least this long, so that clock resolution and the cost of
#: recording events stay small against what is measured
MIN_SAMPLE_MS = 2.0
#: most calls one sample may batch (a tiny op at 5 us a call still fills a sample)
MAX_INNER = 2000


@dataclass
class Stats:
    """Per-call milliseconds: the median and spread of the samples taken."""

    median_ms: float
    p25_ms: float
    p75_ms: float
    min_ms: float
    max_ms: float
    #: how many samples were taken, and how many calls each one timed
    samples: int
    inner: int

    @property
    def spread_pct(self) -> float:
        """The interquartile range as a percentage of the median."""
        if self.median_ms <= 0:
            return 0.0
        return 100.0 * (self.p75_ms - self.p25_ms) / self.median_ms

    @classmethod
    def of(cls, per_call_ms: list[float], inner: int = 1) -> Stats:
        if not per_call_ms:
            raise ValueError("no samples to summarize")
        ordered = sorted(per_call_ms)
        if len(ordered) >= 2:
            q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
        else:
            q1 = q3 = ordered[0]
        return cls(
            median_ms=statistics.median(ordered), p25_ms=q1, p75_ms=q3,
            min_ms=ordered[0], max_ms=ordered[-1], samples=len(ordered), inner=inner,
        )  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stats:
        names = cls.__dataclass_fields__
        return cls(**{k: data[k] for k in names})


class Clock:
    """Times calls made on the host whose work may run asynchronously on a device."""

    #: "events" or "host"; recorded with each result
    kind = "host"

    def sync(self) -> None:
        """Wait until the device has finished everything queued so far."""

    def time(self, fn: Callable[[], Any], count: int) -> float:
        """Milliseconds for `count` calls of `fn`, the device work included."""
        self.sync()
        start = time.perf_counter()
        for _ in range(count):
            fn()
        self.sync()
        return (time.perf_counter() - start) * 1e3


class HostClock(Clock):
    """The host's monotonic clock, read after `sync` (the device's synchronize, if any)."""

    def __init__(self, sync: Callable[[], None] | None = None) -> None:
        self._sync = sync

    def sync(self) -> None:
        if self._sync is not None:
            self._sync()


class EventClock(Clock):
    """Device events recorded before and after the calls, on the stream the work uses.

    `make_event()` returns an object with ``record()`` and ``synchronize()``;
    `elapsed(start, end)` gives the milliseconds between two recorded events.
    """

    kind = "events"

    def __init__(
        self,
        make_event: Callable[[], Any],
        elapsed: Callable[[Any, Any], float],
        sync: Callable[[], None],
    ) -> None:
        self._make_event = make_event
        self._elapsed = elapsed
        self._sync = sync
        self._start = make_event()
        self._end = make_event()

    def sync(self) -> None:
        self._sync()

    def time(self, fn: Callable[[], Any], count: int) -> float:
        self._start.record()
        for _ in range(count):
            fn()
        self._end.record()
        self._end.synchronize()
        return float(self._elapsed(self._start, self._end))


def measure(
    fn: Callable[[], Any],
    clock: Clock,
    repeats: int,
    warmup: int = 2,
    budget_s: float = 10.0,
    min_sample_ms: float = MIN_SAMPLE_MS,
) -> Stats:
    """Warm up, then time `repeats` samples of `fn` (fewer if `budget_s` runs out).

    One sample times `inner` back-to-back calls, `inner` chosen from a first timed call so
    that a sample lasts at least `min_sample_ms`; the per-call times are summarized. At
    least three samples are taken whatever the budget (or `repeats`, if fewer).
    """
    with no_gc():
        return _measure(fn, clock, repeats, warmup, budget_s, min_sample_ms)


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic garbage collector off while timing (as timeit does): a collection that
    lands in one sample says nothing about the op."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _measure(
    fn: Callable[[], Any], clock: Clock, repeats: int, warmup: int, budget_s: float,
    min_sample_ms: float,
) -> Stats:  # fmt: skip
    for _ in range(max(0, warmup)):
        fn()
    clock.sync()
    first = clock.time(fn, 1)
    inner = (
        1 if first >= min_sample_ms else min(MAX_INNER, math.ceil(min_sample_ms / max(first, 1e-4)))
    )
    samples: list[float] = []
    deadline = time.perf_counter() + budget_s
    for _ in range(max(1, repeats)):
        samples.append(clock.time(fn, inner) / inner)
        if len(samples) >= min(3, repeats) and time.perf_counter() > deadline:
            break
    return Stats.of(samples, inner)


class Rotation:
    """Cycles through several copies of a case's inputs, one copy a call.

    Repeated calls on one buffer measure the cache once the data fits in it; calling on
    the next copy each time keeps the data cold, as it is in a real workload.
    """

    def __init__(self, sets: list[list[Any]]) -> None:
        if not sets:
            raise ValueError("Rotation needs at least one input set")
        self.sets = sets
        self._next = 0

    def __call__(self) -> list[Any]:
        args = self.sets[self._next]
        self._next = (self._next + 1) % len(self.sets)
        return args

    def __len__(self) -> int:
        return len(self.sets)


def copies_for(nbytes_per_set: int, cache_bytes: int, limit: int = 64) -> int:
    """How many input copies keep a working set of `nbytes_per_set` out of the cache:
    enough that together they span four times the cache (1 when one set already does)."""
    if nbytes_per_set <= 0:
        return 1
    return max(1, min(limit, math.ceil(4 * cache_bytes / nbytes_per_set)))


def per_call_interleaved(
    contestants: list[tuple[Callable[[], Any], Callable[[], None]]],
    calls: int,
    *,
    warmup: int,
    repeats: int,
    budget_s: float,
    settle_s: float = 0.2,
) -> list[Stats]:
    """`per_call` for several (fn, sync) pairs at once, their samples taken in turn: a
    drift in the host's clock speed over the run (frequency scaling, a neighbour's load)
    lands on every contestant alike instead of on whoever went first. Each first runs for
    `settle_s` seconds untimed."""
    clocks = [HostClock(sync) for _, sync in contestants]
    for (fn, _), clock in zip(contestants, clocks, strict=True):
        for _ in range(max(1, warmup)):
            clock.time(fn, min(calls, 100))
        end = time.perf_counter() + settle_s
        while time.perf_counter() < end:
            clock.time(fn, min(calls, 100))
    samples: list[list[float]] = [[] for _ in contestants]
    deadline = time.perf_counter() + budget_s * len(contestants)
    with no_gc():
        for _ in range(repeats):
            for (fn, _), clock, got in zip(contestants, clocks, samples, strict=True):
                got.append(clock.time(fn, calls) / calls)
            if len(samples[0]) >= min(3, repeats) and time.perf_counter() > deadline:
                break
    return [Stats.of(got, inner=calls) for got in samples]


#: calls per sample of `issue_us`: few enough that the launch queue never fills, so the
#: host never waits for the device while it issues them
ISSUE_CALLS = 64


def issue_us(
    contestants: list[tuple[Callable[[], Any], Callable[[], None]]],
    rounds: int = 41,
    calls: int = ISSUE_CALLS,
) -> list[float]:
    """Host time alone per call, in microseconds, for each (fn, sync): the median over
    `rounds` of `calls` back-to-back calls timed up to the last call's return, the sync
    that follows not counted; contestants take turns as in `per_call_interleaved`. Where
    the burst time of `per_call_interleaved` is larger, the device (or the driver's launch
    rate), not the host, sets the pace."""
    samples: list[list[float]] = [[] for _ in contestants]
    with no_gc():
        for _ in range(rounds):
            for (fn, sync), got in zip(contestants, samples, strict=True):
                sync()
                start = time.perf_counter()
                for _ in range(calls):
                    fn()
                got.append((time.perf_counter() - start) * 1e6 / calls)
                sync()
    return [statistics.median(got) for got in samples]


def per_call(
    fn: Callable[[], Any],
    sync: Callable[[], None],
    calls: int,
    *,
    warmup: int,
    repeats: int,
    budget_s: float,
) -> Stats:
    """Per-call time of `calls` back-to-back calls with one sync at the end, over up to
    `repeats` samples (at least 3 once `budget_s` has passed)."""
    clock = HostClock(sync)
    for _ in range(max(1, warmup)):
        clock.time(fn, min(calls, 100))
    samples: list[float] = []
    deadline = time.perf_counter() + budget_s
    with no_gc():
        for _ in range(repeats):
            samples.append(clock.time(fn, calls) / calls)
            if len(samples) >= min(3, repeats) and time.perf_counter() > deadline:
                break
    return Stats.of(samples, inner=calls)
