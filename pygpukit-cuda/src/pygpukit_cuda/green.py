"""SM partitions through green contexts: reserve SMs of a GPU for latency-sensitive work."""

from __future__ import annotations

from typing import Any

from . import _loader
from .streams import Stream


def _context(index: int) -> Any:
    from .device import context

    return context(index)


def unavailable_reason(device: int = 0) -> str | None:
    """Why SMs cannot be partitioned on `device` (no driver, a driver without green
    contexts, a device that refuses), or None when they can."""
    try:
        native = _loader.driver()
    except Exception as exc:  # no extension or no driver: the message says which
        return str(exc)
    status = str(native.green_contexts_status())
    if status:
        return status
    try:
        native.sm_info(_context(device))
    except Exception as exc:
        return f"the device refuses to report its SM resource: {exc}"
    return None


def sm_layout(device: int = 0) -> dict[str, int]:
    """The device's SMs as partitions see them: ``sms``, ``min_partition`` and ``alignment``
    (the last two filled in from the architecture where the driver leaves them 0)."""
    sms, smallest, align = _loader.driver().sm_info(_context(device))
    if not smallest or not align:
        major = int(_context(device).compute_capability()[0])
        # the CUDA programming guide's granularity per architecture
        step = 8 if major >= 9 else 4 if major == 8 else 2
        smallest, align = smallest or step, align or (2 if major < 9 else step)
    return {"sms": int(sms), "min_partition": int(smallest), "alignment": int(align)}


def round_sms(requested: float, layout: dict[str, int]) -> int:
    """`requested` SMs rounded up to the device's granularity, leaving at least one
    minimal partition for the rest; ValueError when that is impossible."""
    smallest, align, total = layout["min_partition"], layout["alignment"], layout["sms"]
    if requested <= 0:
        raise ValueError(f"sms must be positive, got {requested}")
    wanted = max(smallest, int(-(-requested // 1)))
    wanted = -(-wanted // align) * align
    most = (total - smallest) // align * align
    if most < smallest:
        raise ValueError(f"a device of {total} SMs cannot be split in two")
    return min(wanted, most)


class SmPartition:
    """A GPU split into two green contexts: `reserved_sms` SMs and the `rest_sms` others.

    Streams from :meth:`stream` run their kernels on one side only, so work on the rest
    cannot take the reserved SMs (memory bandwidth and L2 stay shared).
    """

    def __init__(self, sms: float, device: int = 0) -> None:
        reason = unavailable_reason(device)
        if reason is not None:
            raise RuntimeError(f"cannot partition the SMs of cuda:{device}: {reason}")
        self.device_index = device
        self.layout = sm_layout(device)
        wanted = round_sms(sms, self.layout)
        self._reserved, self._rest = _loader.driver().split_sms(_context(device), wanted)
        self.reserved_sms = int(self._reserved.sm_count)
        self.rest_sms = int(self._rest.sm_count)

    def check(self) -> str | None:
        """Run a small product and an elementwise kernel on each side and compare them with
        the default stream's; None when both sides agree, else what went wrong (drivers
        differ in whether kernels of the primary context run on green-context streams)."""
        import numpy as np
        import pygpukit as gp

        device = f"cuda:{self.device_index}"
        rng = np.random.default_rng(1)
        a = gp.asarray(rng.standard_normal((64, 96)).astype(np.float32), device=device)
        b = gp.asarray(rng.standard_normal((96, 32)).astype(np.float32), device=device)
        want = gp.maximum(gp.matmul(a, b), 0.0).to_numpy()
        for side in ("reserved", "rest"):
            stream = self.stream(side)
            try:
                with stream:
                    got = gp.maximum(gp.matmul(a, b), 0.0).to_numpy()
                stream.synchronize()
            except Exception as exc:  # the driver refused: say so, the caller falls back
                return f"work on the {side} SMs failed: {type(exc).__name__}: {exc}"
            if not np.array_equal(got, want):
                return f"work on the {side} SMs gave a different result than the default stream"
        return None

    def stream(self, side: str = "reserved", priority: int = 0) -> Stream:
        """A new stream on the `side` ("reserved" or "rest") at CUDA `priority`."""
        if side not in ("reserved", "rest"):
            raise ValueError(f"side must be 'reserved' or 'rest', got {side!r}")
        green = self._reserved if side == "reserved" else self._rest
        return Stream(int(priority), True, device=self.device_index, green=green)

    def __repr__(self) -> str:
        return (
            f"<SmPartition cuda:{self.device_index} reserved={self.reserved_sms} "
            f"rest={self.rest_sms} of {self.layout['sms']} SMs>"
        )
