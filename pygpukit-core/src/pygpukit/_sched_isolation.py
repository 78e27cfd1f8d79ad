"""Where a scheduler task's kernels run: reserved SMs (green contexts) and stream priorities."""

from __future__ import annotations

import threading
from typing import Any

from ._device import Device

MODES = ("auto", "sm", "priority")
TIERS = ("guaranteed", "burstable", "best_effort")


def tier_of(policy: str | None, memory: object, memory_limit: object) -> str:
    """The QoS class as the runtime infers it (Kubernetes style) when `policy` is None."""
    if policy is not None:
        name = policy.lower().replace("-", "_")
        return "best_effort" if name == "besteffort" else name
    if memory is None and memory_limit is None:
        return "best_effort"
    return "guaranteed" if memory == memory_limit else "burstable"


def _cuda() -> Any:
    import pygpukit

    return pygpukit.cuda  # the CUDA plugin's public namespace


class Isolation:
    """Per scheduler: guaranteed tasks get SMs of their own where the driver has green
    contexts (the reserve is sized from the first guaranteed task's bandwidth share, or
    `reserve_sms`); the others run on the remaining SMs; inside each side streams are
    prioritised by tier. Without green contexts (or with mode="priority") only the stream
    priorities apply, and `reason` says why.

    A task's stream is chosen when it starts and kept to its end, so with `reserve_sms` the
    reserve is made here, at once: a best-effort task started before the first guaranteed
    one would otherwise run on every SM, the reserved ones included, for its whole life
    (the H100 qos run: the guaranteed request at 5x its solo p50 under the scheduler against
    1.1x with the same 32-SM reserve made by hand). Without `reserve_sms` such tasks are
    counted in ``stats()["unreserved_tasks"]``.
    """

    def __init__(self, device: Device, mode: str, reserve_sms: int | None) -> None:
        if not isinstance(mode, str) or mode not in MODES:
            raise ValueError(f"isolation must be one of {', '.join(MODES)}; got {mode!r}")
        if reserve_sms is not None and (
            isinstance(reserve_sms, bool) or not isinstance(reserve_sms, int) or reserve_sms <= 0
        ):
            raise ValueError(f"reserve_sms must be a positive int, got {reserve_sms!r}")
        self.device = device
        self.mode = mode
        self.reserve_sms = reserve_sms
        self.reason: str | None = None
        self._partition: Any = None
        self._lock = threading.Lock()
        #: stream handle -> the SMs its kernels run on ("reserved", "rest" or "all")
        self._sides: dict[int, str] = {}
        #: non-guaranteed tasks whose stream was chosen before a reserve existed
        self._unreserved = 0
        if device.type != "cuda":
            self.reason = f"{device} has no streams or SMs to partition"
        elif mode == "priority":
            self.reason = "isolation='priority' was asked for"
        else:
            self.reason = _cuda().sm_partition_unavailable(device.index)
            if self.reason is not None and mode == "sm":
                raise RuntimeError(f"isolation='sm' is unavailable on {device}: {self.reason}")
            if self.reason is None and reserve_sms is not None:
                self._reserve(None)  # before any task starts: see the class docs

    def prepare(self, tier: str, bandwidth: float | None) -> None:
        """Make the SM reserve when the first guaranteed task arrives (on the submitter's
        thread, so a failure is recorded before the task runs)."""
        if tier != "guaranteed" or self._partition is not None or self.reason is not None:
            return
        self._reserve(bandwidth)

    def _reserve(self, bandwidth: float | None) -> None:
        with self._lock:
            if self._partition is not None or self.reason is not None:
                return
            cuda = _cuda()
            try:
                total = cuda.sm_layout(self.device.index)["sms"]
                wanted = self.reserve_sms or max(1.0, (bandwidth or 0.1) * total)
                partition = cuda.SmPartition(wanted, self.device.index)
                problem = partition.check()
                if problem is not None:
                    raise RuntimeError(problem)
                self._partition = partition
            except (RuntimeError, ValueError, OSError) as exc:
                self.reason = f"could not reserve SMs: {exc}"
                if self.mode == "sm":
                    raise

    def lane(self, tier: str) -> int:
        """The runtime's lane for a task of `tier`: 1 on the reserved SMs, else 0 (tasks in
        different lanes do not time-share the device)."""
        return 1 if self._partition is not None and tier == "guaranteed" else 0

    def stream(self, tier: str, priority: int) -> Any:
        """A new stream for a task of `tier` and task `priority`; None without streams."""
        if self.device.type != "cuda":
            return None
        cuda = _cuda()
        least, greatest = cuda.stream_priority_range(self.device.index)
        if tier == "guaranteed":
            level = greatest  # the most urgent in its context
        elif priority > 0:
            level = max(greatest, min(least, least - priority))
        else:
            level = least
        part = self._partition
        if part is not None:
            side = "reserved" if tier == "guaranteed" else "rest"
            stream = part.stream(side, level)
        else:
            side = "all"
            stream = cuda.Stream(priority=level, non_blocking=True, device=self.device.index)
            if tier != "guaranteed" and self.reason is None:
                with self._lock:  # a reserve made later cannot move this task off its SMs
                    self._unreserved += 1
        with self._lock:
            self._sides[stream.ptr] = side
        return stream

    def side_of(self, stream: Any) -> str | None:
        """Which SMs a task stream's kernels run on: "reserved", "rest" or "all" (the whole
        device); None for a stream this scheduler did not make."""
        return self._sides.get(int(getattr(stream, "ptr", -1)))

    def forget(self, stream: Any) -> None:
        """The task on `stream` ended."""
        with self._lock:
            self._sides.pop(int(getattr(stream, "ptr", -1)), None)

    def stats(self) -> dict[str, Any]:
        part = self._partition
        return {
            "mode": "sm" if part is not None else "priority",
            "reserved_sms": part.reserved_sms if part is not None else 0,
            "rest_sms": part.rest_sms if part is not None else None,
            "reason": self.reason,
            "unreserved_tasks": self._unreserved,
        }
