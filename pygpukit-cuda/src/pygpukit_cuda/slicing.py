"""When and how our kernels of best-effort scheduler tasks run in slices: large matrix
products as row slices, large elementwise ops and reductions as block ranges of their own
grid. The GPU work a guaranteed task can queue behind is then one slice, not a whole op;
each slice passes the launch gate (device-time charge, queue bound, fair share) on its
own, and between slices the task yields while a guaranteed task's work on the same SMs is
on the device. The one home of the slicing policy: every sliced op asks here."""

from __future__ import annotations

import math

import _pygpukit_rust as _rust

#: the device time one slice aims at: about what a guaranteed launch may wait behind it
SLICE_NS = 400_000
#: floating-point operations of one slice: about SLICE_NS of bf16 work on an H100, a
#: fraction of the 1.5 ms an 8192-cubed product keeps every SM busy
SLICE_FLOPS = 1 << 38
#: bytes an elementwise op or a reduction moves per slice: about SLICE_NS at the H100's
#: 3 TB/s (smaller ops are over before a slice would be)
SLICE_BYTES = 1 << 30
#: slices are whole multiples of this many rows, so each stays a full-tile product
ROW_STEP = 256
#: elementwise blocks along an axis are whole multiples of this many elements, so each
#: block's pointers keep the whole op's 16-byte alignment (and its vector path)
ELEMENT_STEP = 256
#: the longest a slice waits for a guaranteed task's work, so best-effort work still moves
MAX_YIELD_S = 0.002


def wanted() -> bool:
    """Whether the op runs inside a best-effort task (one thread-local read in Rust)."""
    return _rust.current_task_policy() == "best_effort"


def rows_per_slice(m: int, n: int, k: int) -> int | None:
    """Rows of `out` per slice for an (m x k) @ (k x n) product inside a best-effort task,
    or None when it runs whole (small, too few rows, or not a best-effort task)."""
    flops = 2 * m * n * k
    if flops <= SLICE_FLOPS or m < 2 * ROW_STEP or not wanted():
        return None
    slices = -(-flops // SLICE_FLOPS)
    rows = -(-m // slices)
    rows = -(-rows // ROW_STEP) * ROW_STEP
    return rows if rows < m else None


def batches_per_slice(batches: int, flops_per_batch: int) -> int | None:
    """Leading-batch entries per slice of a batched product inside a best-effort task (at
    least one; a batch over the slice size is then sliced by rows), or None when whole."""
    if batches < 2 or batches * flops_per_batch <= SLICE_FLOPS or not wanted():
        return None
    return max(1, min(batches - 1, SLICE_FLOPS // max(1, flops_per_batch)))


def pieces_for_bytes(nbytes: int) -> int:
    """How many slices an op moving `nbytes` runs in: 1 unless it is inside a best-effort
    task and moves more than SLICE_BYTES."""
    if nbytes <= SLICE_BYTES or not wanted():
        return 1
    return -(-nbytes // SLICE_BYTES)


def blocks(shape: tuple[int, ...], pieces: int) -> list[tuple[int | slice, ...]]:
    """Basic indexes that cut an array of `shape` into about `pieces` blocks in C order:
    whole leading indexes, then a range of the first axis that gives enough blocks (ranges
    of ELEMENT_STEP multiples where the axis is long enough). One block `()` when the shape
    cannot be cut (a scalar, or pieces <= 1)."""
    if pieces <= 1 or not shape or math.prod(shape) == 0:
        return [()]
    lead = 1
    for axis, size in enumerate(shape):
        if lead * size >= pieces or axis == len(shape) - 1:
            break
        lead *= size
    per = -(-size // max(1, -(-pieces // lead)))  # elements of `axis` per block
    if size >= 2 * ELEMENT_STEP:
        per = -(-per // ELEMENT_STEP) * ELEMENT_STEP
    ranges = [slice(a, min(size, a + per)) for a in range(0, size, per)]
    heads = _index_tuples(shape[:axis])
    return [(*head, r) for head in heads for r in ranges]


def _index_tuples(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for size in shape:
        out = [(*t, i) for t in out for i in range(size)]
    return out


def ranges(count: int, pieces: int) -> list[tuple[int, int]]:
    """(start, length) of `pieces` near-equal runs covering range(count) (fewer if short)."""
    per = -(-count // max(1, min(pieces, count)))
    return [(a, min(per, count - a)) for a in range(0, count, per)]


def between_slices() -> None:
    """Give way to a guaranteed task's work in flight (see MAX_YIELD_S); TaskCancelled once
    the task is cancelled, so a cancel stops a sliced op between its slices."""
    _rust.task_yield(MAX_YIELD_S)
