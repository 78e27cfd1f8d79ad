"""`gp.Scheduler`: share one device between tasks, Kubernetes style.

A thin front over the Rust executor (`_pygpukit_rust.TaskScheduler`): Rust admits,
queues and runs the tasks on its own worker threads, charges each task's allocations to
its reservation, and gates each of its kernel launches (token-bucket pacing plus
weighted fair sharing of the device). This module only shapes the Python API.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Callable, Generator
from typing import Any

import _pygpukit_rust as _rust

from ._device import Device
from ._sched_isolation import Isolation, tier_of

AdmissionError = _rust.AdmissionError
TaskCancelled = _rust.TaskCancelled

_POLICIES = ("guaranteed", "burstable", "best_effort", "besteffort", "best-effort")


def _run_task(
    context: contextvars.Context,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    isolation: Isolation,
    tier: str,
    priority: int,
) -> Any:
    """Call the task's function in the submitter's context (its `gp.config.use()` settings),
    on a stream of its own when the device has streams: on the reserved SMs for a guaranteed
    task where the device is partitioned, prioritised by tier and task priority.

    On failure the runtime clears the locals of the traceback's frames, so the exception it
    keeps does not keep the task's arrays alive.
    """
    return context.run(_run_on_stream, fn, args, isolation, tier, priority)


def _run_on_stream(
    fn: Callable[..., Any], args: tuple[Any, ...], isolation: Isolation, tier: str, priority: int
) -> Any:
    stream = isolation.stream(tier, priority)
    if stream is None:
        return fn(*args)
    try:
        with stream:
            result = fn(*args)
        stream.synchronize()  # the task is done when its kernels are
    finally:
        isolation.forget(stream)
    return result


_I32 = (-(2**31), 2**31 - 1)


def _size(value: Any, name: str) -> int | str | None:
    """A byte count (int > 0) or a size string such as "512MB" (parsed by Rust); checked
    here so that the error names the argument."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(
            f"{name} must be a byte count (int) or a size string such as '512MB', "
            f"got {type(value).__name__}"
        )
    if isinstance(value, str):
        text = value.strip()
        if not text or text.startswith("-"):
            raise ValueError(f"{name} must be a positive size such as '512MB', got {value!r}")
        return text
    if value <= 0:
        raise ValueError(f"{name} must be a positive number of bytes, got {value}")
    if value >= 2**64:
        raise ValueError(f"{name} is too large ({value} bytes does not fit in 64 bits)")
    return value


def _number(value: Any, name: str, low: float, high: float, *, low_open: bool) -> float:
    """A finite real in (low, high] (low_open) or [low, high]; the error names `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    ok = (low < value if low_open else low <= value) and value <= high
    if not ok or value != value:
        bracket = "(" if low_open else "["
        raise ValueError(f"{name} must be in {bracket}{low}, {high}], got {value}")
    return float(value)


def _integer(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return value


def _default_total_memory(device: Device) -> int:
    """What a scheduler shares when not told: the pool's quota if it has one, else the
    device's memory (a GPU), else the host's RAM (the CPU device)."""
    from . import memory

    stats = memory.stats(device)
    for key in ("quota", "device_total"):
        if stats.get(key):
            return int(stats[key])
    return _host_memory()


def _host_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not POSIX: assume a modest machine
        return 8 * 1024**3


class Task:
    """A submitted task: wait for it, await it, cancel it, or read its stats."""

    __slots__ = ("__weakref__", "_lock", "_outcome", "_sched", "id", "name")

    def __init__(self, sched: Scheduler, task_id: int, name: str) -> None:
        self._sched = sched
        self.id = task_id
        self.name = name
        self._lock = threading.Lock()
        # (ok, value, traceback at failure): taken from the runtime on the first result(), so
        # the result is charged to the scheduler only as long as this handle or the caller
        # keeps it
        self._outcome: tuple[bool, Any, Any] | None = None

    def result(self, timeout: float | None = None) -> Any:
        """The function's return value; re-raises its exception (TimeoutError on timeout).

        The first call takes the result over from the scheduler: from then on it lives as
        long as this handle or the caller keeps it (and so does the memory charged for it).
        """
        outcome = self._outcome
        if outcome is None:
            if not self._sched._rs.wait(self.id, timeout):
                raise TimeoutError(
                    f"task {self.id} ({self.name!r}) did not finish within {timeout} s"
                )
            with self._lock:
                outcome = self._outcome
                if outcome is None:
                    ok, value = self._sched._rs.take_result(self.id, 0)
                    tb = None if ok else value.__traceback__
                    outcome = self._outcome = (ok, value, tb)
        ok, value, tb = outcome
        if ok:
            return value
        # the traceback as the task left it, not grown by earlier raises
        raise value.with_traceback(tb)

    def __del__(self) -> None:
        # an outcome nobody took dies with its handle (and its memory charge with it)
        try:
            if self._outcome is None:
                self._sched._rs.discard_result(self.id)
        except Exception:  # interpreter shutdown: the runtime may be gone
            pass

    def done(self) -> bool:
        return bool(self._sched._rs.done(self.id))

    @property
    def state(self) -> str:
        """pending, queued, running, completed, failed or cancelled."""
        return str(self._sched._rs.state(self.id))

    def cancel(self) -> bool:
        """Cancel: a queued task ends now, a running one at its next kernel launch."""
        return bool(self._sched._rs.cancel(self.id))

    def stats(self) -> dict[str, Any]:
        return dict(self._sched._rs.stats(self.id))

    def __await__(self) -> Generator[Any, None, Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not future.done():
                future.set_result(None)

        def finished(_task_id: int) -> None:  # runs on the Rust worker thread
            loop.call_soon_threadsafe(settle)

        self._sched._rs.add_done_callback(self.id, finished)
        yield from future.__await__()
        return self.result(0)

    def __repr__(self) -> str:
        return f"<Task {self.id} {self.name!r} {self.state}>"


class Scheduler:
    """Admission control, QoS classes, partitions and fair sharing of one device.

    >>> sched = gp.Scheduler(total_memory="8GB")
    >>> task = sched.submit(fn, x, memory="512MB", bandwidth=0.2, policy="guaranteed")
    >>> task.result()
    """

    def __init__(
        self,
        total_memory: int | str | None = None,
        *,
        total_bandwidth: float = 1.0,
        workers: int = 4,
        launch_rate: float = 100_000.0,
        fair_share_idle: float = 0.005,
        device: Any = None,
        isolation: str = "auto",
        reserve_sms: int | None = None,
    ) -> None:
        """`total_memory` defaults to the pool's quota, else the device's memory on a GPU
        (host RAM on the CPU device). `launch_rate` is the device's kernel launches per
        second, split between tasks by their bandwidth shares; `fair_share_idle` is how
        long (s) a task between two launches keeps its turn at the device before the next
        task in line gets it. `isolation`: "auto" reserves SMs for guaranteed tasks where
        the GPU has green contexts (`reserve_sms` of them, reserved at once, else sized from
        the first guaranteed task's bandwidth share when it arrives: tasks started before
        then keep every SM, so give `reserve_sms` when best-effort work may come first) and
        falls back to stream priorities, "sm" insists on the reserve, "priority" uses stream
        priorities only."""
        from ._placement import resolve_device

        total_memory = _size(total_memory, "total_memory")
        _number(total_bandwidth, "total_bandwidth", 0.0, 1.0, low_open=True)
        _integer(workers, "workers", 1, 1024)
        _number(launch_rate, "launch_rate", 0.0, float("inf"), low_open=True)
        _number(fair_share_idle, "fair_share_idle", 0.0, 3600.0, low_open=False)
        self.device = resolve_device(device)
        self._isolation = Isolation(self.device, isolation, reserve_sms)
        if total_memory is None:
            total_memory = _default_total_memory(self.device)
        self._rs = _rust.TaskScheduler(
            total_memory,
            total_bandwidth,
            workers=workers,
            launch_rate=launch_rate,
            fair_share_idle_s=fair_share_idle,
        )

    def submit(
        self,
        fn: Callable[..., Any],
        *args: Any,
        memory: int | str | None = None,
        memory_limit: int | str | None = None,
        bandwidth: float | None = None,
        policy: str | None = None,
        priority: int = 0,
        deadline: float | None = None,
        partition: str | None = None,
        name: str | None = None,
    ) -> Task:
        """Run ``fn(*args)`` as a task (use functools.partial for keyword arguments).

        `memory` is the request (and the limit too unless `memory_limit` is given);
        `bandwidth` the device share in (0, 1]; `policy` guaranteed, burstable or
        best_effort (inferred from the sizes when omitted); `deadline` seconds from now.
        Raises AdmissionError when the task can never be admitted.
        """
        if not callable(fn):
            raise TypeError(f"submit wants a callable first, got {type(fn).__name__}")
        if policy is not None and not isinstance(policy, str):
            raise TypeError(
                f"policy must be 'guaranteed', 'burstable' or 'best_effort', "
                f"got {type(policy).__name__} {policy!r}"
            )
        if policy is not None and policy.lower() not in _POLICIES:
            raise ValueError(
                f"unknown policy {policy!r}; use 'guaranteed', 'burstable' or 'best_effort'"
            )
        memory = _size(memory, "memory")
        memory_limit = _size(memory_limit, "memory_limit")
        if bandwidth is not None:
            _number(bandwidth, "bandwidth", 0.0, 1.0, low_open=True)
        _integer(priority, "priority", *_I32)
        if deadline is not None:
            _number(deadline, "deadline", 0.0, float("inf"), low_open=False)
        if partition is not None and not isinstance(partition, str):
            raise TypeError(
                f"partition must be a partition id (str), got {type(partition).__name__}"
            )
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if memory_limit is None:
            memory_limit = memory
        task_name = name or getattr(fn, "__name__", None) or type(fn).__name__
        tier = tier_of(policy, memory, memory_limit)
        self._isolation.prepare(tier, bandwidth)
        task_id = self._rs.submit(
            _run_task,
            (contextvars.copy_context(), fn, args, self._isolation, tier, priority),
            None,
            memory_request=memory,
            memory_limit=memory_limit,
            bandwidth=bandwidth,
            policy=policy,
            priority=priority,
            deadline_s=deadline,
            partition=partition,
            name=task_name,
            lane=self._isolation.lane(tier),
        )
        return Task(self, task_id, task_name)

    def stats(self, task: Task | int | None = None) -> dict[str, Any]:
        """One task's stats (state, wait/run time, memory, launches, throttles, queue
        position), or the scheduler's when no task is given."""
        task_id = task.id if isinstance(task, Task) else task
        stats = dict(self._rs.stats(task_id))
        if task_id is None:
            stats["isolation"] = self._isolation.stats()
        return stats

    def create_partition(
        self,
        partition_id: str,
        name: str | None = None,
        *,
        memory: int | str | None = None,
        compute: float | None = None,
        priority: int = 0,
    ) -> Any:
        """A partition with a memory quota, a compute share and a priority band."""
        if not isinstance(partition_id, str) or not partition_id:
            raise TypeError(f"partition_id must be a non-empty str, got {partition_id!r}")
        memory = _size(memory, "memory")
        if compute is not None:
            _number(compute, "compute", 0.0, 1.0, low_open=True)
        _integer(priority, "priority", *_I32)
        limits = _rust.PartitionLimits(memory, compute, priority)
        return self._rs.create_partition(partition_id, name or partition_id, limits)

    def shutdown(self, wait: bool = True, cancel_pending: bool = False) -> None:
        self._rs.shutdown(wait, cancel_pending)

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
