"""Large matrix products of best-effort scheduler tasks run as row slices, so the GPU work a
guaranteed task can queue behind is one slice, not a whole product; each slice passes the
launch gate (device-time charge, queue bound, fair share) on its own, and between slices
the task yields while a guaranteed task's work on the same SMs is on the device."""

from __future__ import annotations

import _pygpukit_rust as _rust

#: floating-point operations of one slice: about 0.4 ms of bf16 work on an H100, a fraction
#: of the 1.5 ms an 8192-cubed product keeps every SM busy
SLICE_FLOPS = 1 << 38
#: slices are whole multiples of this many rows, so each stays a full-tile product
ROW_STEP = 256
#: the longest a slice waits for a guaranteed task's work, so best-effort work still moves
MAX_YIELD_S = 0.002


def rows_per_slice(m: int, n: int, k: int) -> int | None:
    """Rows of `out` per slice for an (m x k) @ (k x n) product inside a best-effort task,
    or None when it runs whole (small, too few rows, or not a best-effort task)."""
    flops = 2 * m * n * k
    if flops <= SLICE_FLOPS or m < 2 * ROW_STEP:
        return None
    if _rust.current_task_policy() != "best_effort":  # one thread-local read in Rust
        return None
    slices = -(-flops // SLICE_FLOPS)
    rows = -(-m // slices)
    rows = -(-rows // ROW_STEP) * ROW_STEP
    return rows if rows < m else None


def between_slices() -> None:
    """Give way to a guaranteed task's work in flight (see MAX_YIELD_S)."""
    _rust.task_yield(MAX_YIELD_S)
