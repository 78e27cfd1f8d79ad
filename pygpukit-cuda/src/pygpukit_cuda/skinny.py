"""The skinny matmul path of the `cuda` provider: x (M, K) @ W for M <= 8 rows of float16 or
bfloat16, one launch of a weight-streaming kernel (``kernels/skinny_source.py``).

When ``gp.matmul`` takes it (`refusal` returns None), the rule in full:

- compute capability 8.0 or newer, both operands float16 or bfloat16 (the same dtype), x
  2-D with 1..8 rows, W 2-D with K * N >= `MIN_WEIGHT` elements (below that both this
  kernel and cuBLASLt are one launch with nothing to stream, and cuBLASLt stays);
- W is either K x N with unit column stride (``kn``) or the ``.mT`` view of N x K storage
  with unit stride along K (``nk``), its data 16-byte aligned, the row stride and the
  contiguous extent (N for kn, K for nk) multiples of 8 elements: every thread reads 16
  bytes at a time. Anything else (odd sizes, other strides) stays on cuBLASLt;
- ``PYGPUKIT_SKINNY_MATMUL=0`` in the environment (or `ENABLED = False`) turns it off,
  for comparisons.

`explain(x1, x2)` says which path a product takes and why; ``gp.explain("matmul", x, w)``
shows the same line. cuBLASLt's M=1 kernels stream
1.3-2.4 TB/s of an H100's ~3.35 (scripts/probe_decode.py, notes s18); this kernel keeps
32-128 KB of loads in flight per SM (the launch shape below), what ~1 us of memory latency
needs to run at full bandwidth.

Launch shape: grid (column tiles, splits). Splits of K are chosen so that tiles * splits
fills every SM with the blocks it can hold (``skinny_source.resident_blocks``: 2 to 4
blocks of 256 threads, held by ``__launch_bounds__``) in whole waves, no split shorter
than one unrolled step of the kernel and each split's x slice within `X_SLICE_BYTES` of
shared memory. With more than one split, the float32 partial sums go to a workspace and
a per-tile arrival counter picks the block that adds them in fixed order.

The counters and the workspace live per stream (launches on one stream run in order, so
one block of each serves them all): the counters are zeroed once when the stream first
needs them, and every launch leaves them at zero again, so later launches need no memset.
A graph captures on a stream of its own, so it gets its own blocks from its private pool
(one fill node in the graph, from the first skinny product it captures) and a replay
never shares them with eager calls on other streams.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import launcher, plans, streams
from .device_facts import compute_capability, sm_count
from .device_facts import data_ptr as _ptr
from .kernels import skinny_source as ks

#: smallest weight (elements) worth the kernel: 64 K elements = 128 KB in 16-bit
MIN_WEIGHT = 64 * 1024
#: per-tile arrival counters in one zeroed block (a tile count over this gets one split)
COUNTERS = 16384
ENABLED = os.environ.get("PYGPUKIT_SKINNY_MATMUL", "1") != "0"
_bound = plans.SKINNY


@dataclass(frozen=True)
class Plan:
    """One product's launch: kernel layout, grid (tiles, splits), rows of K per split,
    dynamic shared memory bytes."""

    layout: str
    rows: int
    tiles: int
    splits: int
    kc: int
    shared: int

    @property
    def grid(self) -> tuple[int, int]:
        return (self.tiles, self.splits)

    def workspace_floats(self, n: int) -> int:
        return 0 if self.splits == 1 else self.splits * self.rows * n


def _round_up(a: int, b: int) -> int:
    return -(-a // b) * b


def _balanced(tiles: int, low: int, high: int, target: int) -> int:
    """The fewest splits in low..high whose blocks fill the resident slots in whole waves
    (>= 95%: the last wave of 704 blocks on 528 slots would run a third full), else the
    best filling one."""
    best, best_fill = low, 0.0
    for splits in range(low, high + 1):
        waves = tiles * splits / target
        fill = waves / math.ceil(waves)
        if fill >= 0.95:
            return splits
        if fill > best_fill:
            best, best_fill = splits, fill
    return best


def plan(layout: str, m: int, n: int, k: int, sms: int) -> Plan:
    """The launch for an (m, k) @ (k, n) product on a device of `sms` SMs."""
    if layout == "kn":
        tiles = -(-n // ks.KN_TILE)
        step = 32 * ks.kn_unroll(m)  # rows of K one unrolled block step covers
        quantum = 32  # every split a multiple of the block's 32 row groups
        most = (ks.X_SLICE_BYTES // (4 * m)) // quantum * quantum
        per_k_bytes = 4 * m
    else:
        r, unroll = ks.nk_shape(m)
        tiles = -(-n // (8 * r))
        step = 256 * unroll
        quantum = 256  # a warp step of 32 lanes x 8 elements (keeps the slices aligned)
        most = (ks.X_SLICE_BYTES // (2 * m)) // quantum * quantum
        per_k_bytes = 2 * m
    target = sms * ks.resident_blocks(layout, m)
    low = max(1, target // tiles)
    low = min(low, max(1, k // step))  # no split shorter than one unrolled step
    low = max(low, -(-k // most))  # every x slice fits its shared memory
    splits = low
    if tiles > COUNTERS:
        splits = -(-k // most)  # never more than shared memory forces
    elif tiles * low * 2 >= target:
        splits = _balanced(tiles, low, max(low, min(3 * low, k // quantum)), target)
    kc = _round_up(-(-k // splits), quantum)
    kc = min(kc, most)
    splits = -(-k // kc)
    if splits == 1:
        kc = k
    return Plan(layout, m, tiles, splits, kc, kc * per_k_bytes)


# -- eligibility ---------------------------------------------------------------------
def _layout(x2: GPUArray) -> tuple[str, int] | None:
    """("kn" | "nk", W's row stride in elements) when W's strides allow 16-byte loads."""
    k, n = x2._shape
    s0, s1 = x2._strides
    size = x2._dtype.itemsize
    if s1 == size and s0 % (8 * size) == 0 and s0 >= n * size and n % 8 == 0:
        return "kn", s0 // size
    if s0 == size and s1 % (8 * size) == 0 and s1 >= k * size and k % 8 == 0:
        return "nk", s1 // size
    return None


def refusal(x1: GPUArray, x2: GPUArray, out: GPUArray | None = None) -> str | None:
    """Why the skinny kernel does not take out = x1 @ x2 (None: it does); without `out`,
    for a new contiguous output of x1's dtype."""
    if not ENABLED:
        return "turned off (PYGPUKIT_SKINNY_MATMUL=0)"
    dtype = x1._dtype if out is None else out._dtype
    if dtype not in ks.DTYPES or x1._dtype is not dtype or x2._dtype is not dtype:
        return "only float16 and bfloat16 operands of the output's dtype"
    if len(x1._shape) != 2 or len(x2._shape) != 2:
        return "batched product (the kernel takes a 2-D x and a 2-D weight)"
    m, k = x1._shape
    n = x2._shape[1]
    if not 1 <= m <= ks.MAX_ROWS:
        return f"{m} rows (the kernel takes 1..{ks.MAX_ROWS})"
    if k * n < MIN_WEIGHT:
        return f"weight of {k * n} elements, under {MIN_WEIGHT}: cuBLASLt is as quick"
    if any(s % dtype.itemsize for s in x1._strides):
        return "x's strides are not whole elements"
    if _layout(x2) is None:
        return ("weight strides or sizes rule out 16-byte loads (K x N with unit column "
                "stride and N % 8 == 0, or N x K storage with K % 8 == 0)")  # fmt: skip
    if _ptr(x2) % 16:
        return "weight data not 16-byte aligned"
    if out is not None and not out.is_contiguous:
        return "output not contiguous"
    if x1._device.type != "cuda" or compute_capability(x1._device.index) < 80:
        return "compute capability under 8.0"
    return None


def explain(x1: GPUArray, x2: GPUArray) -> str:
    """Which kernel ``gp.matmul(x1, x2)`` runs on the cuda provider for these operands
    (1-D ones promoted as matmul promotes them); nothing is allocated or launched."""
    if len(x1.shape) == 1:
        x1 = x1.reshape((1, -1))
    if len(x2.shape) == 1:
        x2 = x2.reshape((-1, 1))
    why = refusal(x1, x2)
    if why is not None:
        return f"cuBLASLt: the skinny kernel passes ({why})"
    lay = _layout(x2)
    assert lay is not None
    m, k = x1.shape
    n = x2.shape[1]
    p = plan(lay[0], m, n, k, sm_count(x1.device.index))
    return (f"skinny {lay[0]} kernel: {m} rows <= {ks.MAX_ROWS}, weight {k}x{n} streamed "
            f"with 16-byte loads; grid {p.tiles} tiles x {p.splits} splits of {p.kc} "
            "rows")  # fmt: skip


# -- per-stream scratch ---------------------------------------------------------------
class _Scratch:
    """A stream's arrival counters (zero at rest) and float32 workspace for partial sums.
    Launches on one stream run in order, so one block of each serves them all."""

    def __init__(self, index: int) -> None:
        import pygpukit as gp

        self.index = index
        self.counters = gp.zeros((COUNTERS,), dtype=gp.int32, device=f"cuda:{index}")
        self.counters_ptr = _ptr(self.counters)
        self.floats = 0
        self.workspace: GPUArray | None = None
        self.workspace_ptr = 0

    def workspace_for(self, floats: int) -> int:
        if floats > self.floats:  # grows only; the old block is freed in stream order
            floats = max(floats, 2 * self.floats)
            self.workspace = GPUArray.empty((floats,), dt.float32, self.counters._device)
            self.workspace_ptr, self.floats = _ptr(self.workspace), floats
        return self.workspace_ptr


#: scratch per Stream object: the null streams live for the process, a created stream's
#: (a graph's capture stream included: its blocks come from the graph's pool and live as
#: long as the graph holds the stream) goes with it
_scratch: weakref.WeakKeyDictionary[Any, _Scratch] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _scratch_of(index: int) -> _Scratch:
    stream = streams.current(index)
    got = _scratch.get(stream)
    if got is None:
        with _lock:
            got = _scratch.get(stream)
            if got is None:
                got = _scratch[stream] = _Scratch(index)
    return got


# -- the launch ----------------------------------------------------------------------
_MISSING = object()


def _bind(x1: GPUArray, x2: GPUArray, out: GPUArray) -> tuple[Any, ...] | None:
    """The launch for these operand layouts: (kernel, plan, arguments after the
    pointers), or None when `refusal` says the skinny kernel does not take them."""
    if refusal(x1, x2, out) is not None:
        return None
    lay = _layout(x2)
    assert lay is not None
    layout, ldw = lay
    m, k = x1._shape
    n = x2._shape[1]
    index = out._device.index
    p = plan(layout, m, n, k, sm_count(index))
    if (p.splits > 1 and p.tiles > COUNTERS) or p.splits > 65535:  # past the counters or
        return None  # the grid's y limit (K in the tens of millions): stay on cuBLASLt
    size = x1._dtype.itemsize
    name, src = ks.kernel(layout, out._dtype, m)
    fn = launcher.function(index, name, src, ks.ARG_FORMAT)
    rest = (n, k, p.kc, x1._strides[0] // size, x1._strides[1] // size, ldw, n)
    return fn, p, rest


def matmul(x1: GPUArray, x2: GPUArray, out: GPUArray) -> bool:
    """out = x1 @ x2 through the skinny kernel; False (nothing done) when `refusal` says
    it does not take them."""
    if not ENABLED:
        return False
    dtype = out._dtype
    if x1._dtype is not dtype or x2._dtype is not dtype:
        return False  # (what `refusal` says first; checked here so the key holds one dtype)
    b_ptr = _ptr(x2)
    key = (x1._shape, x1._strides, x2._shape, x2._strides, out._strides, dtype, out._device,
           b_ptr & 15)  # fmt: skip
    bound = _bound.get(key, _MISSING)
    if bound is _MISSING:
        bound = _bound.put(key, _bind(x1, x2, out))
    if bound is None:
        return False
    fn, p, rest = bound
    ws = counters = 0
    if p.splits > 1:
        scratch = _scratch_of(out._device.index)
        ws, counters = scratch.workspace_for(p.workspace_floats(rest[0])), scratch.counters_ptr
    fn.launch(p.grid, (ks.THREADS,), (_ptr(out), _ptr(x1), b_ptr, ws, counters, *rest),
              p.shared)  # fmt: skip
    return True
