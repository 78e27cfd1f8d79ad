"""cuBLASLt for the float matrix products: found at run time, planned and run natively.

The library is located by ``PYGPUKIT_CUBLASLT_PATH`` (a file or folder) when set, else by
NVIDIA's ``cuda-pathfinder`` (the ``nvidia-cublas`` wheel, then the system's CUDA), and
opened by the extension (``_native.CublasLt``: dlopen, one handle per context). Nothing is
linked at build time; ``status()`` says in one line what was found or why not, and
``library()`` is None when it is absent (the NVRTC kernels of ``matmul`` then serve every
dtype).

A product is a native `MatmulPlan` (descriptors, layouts and the heuristic's candidate
algorithms, destroyed with the plan), made by `plan_for` and cached here per problem
(dtype, compute mode, operand layouts, batch, alignments). Calling it,
``plan(stream, a, b, d, workspace)``, is one native call into cublasLtMatmul. Its workspace
is a pool block taken on the calling stream for that one call (the pool is stream-ordered,
so the next product on that stream reuses the block at once; while a CUDA graph is being
captured it comes from the graph's private pool).

cuBLASLt is column-major, so ``out = a @ b`` runs as ``out^T = b^T a^T`` with each operand
expressed through the op flag and leading dimension of its layout (transposed views need
no copy). A new product's plan may time the heuristic's candidates once on its first run
(``TRIAL_*``; each timed run starts with the weights out of L2) and keep a clearly faster
one: ``PYGPUKIT_CUBLASLT_TRIAL=auto`` (the default) does so for small, decode-shaped
products (up to ``TRIAL_SMALL_FLOPS``; the heuristic's first pick for 1 x 4096 @ 4096 x
4096 bf16 was not the fastest on the H100, and the trial costs a few milliseconds there),
``1`` for every product of at least ``TRIAL_MIN_FLOPS`` too, ``0`` never. The choice is
made once, outside graph capture, and kept: a replayed graph
runs the same algorithm as the eager call did (bit-identical results).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import _loader, plans, runtime_libs, slicing, streams

#: Workspace a product may use (what cuBLASLt's Hopper kernels like to have).
WORKSPACE_BYTES = 32 << 20
#: Heuristic results asked for per plan: the candidates of the timed trial.
HEURISTIC_RESULTS = 8
#: With the trial on ("1"), products of at least this many flops (2*M*N*K*batch) time their
#: candidates once, on their first run: about 2048^3 and up, where the kernel sets the pace.
TRIAL_MIN_FLOPS = 2 * 2048**3
#: The default ("auto") times the candidates of products up to this many flops (64 rows of
#: an 8192 x 8192 weight): each run takes microseconds, so the trial costs little.
TRIAL_SMALL_FLOPS = 2 * 64 * 8192 * 8192
#: Device time the trial may spend (milliseconds, roughly), timed runs per candidate, and
#: how much faster than the heuristic's first another candidate must be to replace it.
TRIAL_BUDGET_MS = 150.0
TRIAL_REPEATS = 5
TRIAL_MARGIN = 0.95  # the trial's single samples scatter by about 3% on the H100

# cudaDataType_t, cublasComputeType_t and cublasOperation_t of the CUDA headers
_R_32F, _R_64F, _R_16F, _R_16BF, _C_32F, _C_64F = 0, 1, 2, 14, 4, 5
COMPUTE_32F, COMPUTE_64F, COMPUTE_32F_FAST_TF32 = 68, 70, 77
OP_N, OP_T = 0, 1

_DATA_TYPE = {"float16": _R_16F, "bfloat16": _R_16BF, "float32": _R_32F, "float64": _R_64F,
              "complex64": _C_32F, "complex128": _C_64F}  # fmt: skip
#: dtypes cuBLASLt serves here (integers go to the NVRTC kernels; complex has only cuBLASLt)
DTYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.complex64, dt.complex128)


def candidates() -> list[str]:
    """Paths to open, in order: ``PYGPUKIT_CUBLASLT_PATH``, then what cuda-pathfinder finds."""
    return runtime_libs.candidates("PYGPUKIT_CUBLASLT_PATH", "libcublasLt.so*", _pathfinder_path())


def _pathfinder_path() -> str | None:
    """Where cuda-pathfinder finds libcublasLt (wheels first, then the system), or None."""
    return runtime_libs.pathfinder_path("cublasLt")


_lock = threading.Lock()
_tried = False
_lib: Any = None
_status = "cuBLASLt not looked for yet"


def library() -> Any:
    """The opened ``_native.CublasLt``, or None when it is not installed (see `status`)."""
    global _tried, _lib, _status
    if not _tried:
        with _lock:
            if not _tried:
                if os.environ.get("PYGPUKIT_CUBLASLT", "1") == "0":
                    _status = "cuBLASLt disabled by PYGPUKIT_CUBLASLT=0"
                else:
                    _lib, _status = _open(candidates())
                _tried = True
    return _lib


def status() -> str:
    library()
    return _status


def _open(paths: list[str]) -> tuple[Any, str]:
    def describe(lt: Any) -> str:
        v = int(lt.version)
        return f"cuBLASLt {v // 10000}.{(v // 100) % 100}.{v % 100} from {lt.path}"

    lt, said = runtime_libs.open_first(paths, _loader.native().CublasLt, describe)
    if lt is not None:
        return lt, said[0]
    return None, (
        "cuBLASLt not found (pip install nvidia-cublas, or set PYGPUKIT_CUBLASLT_PATH); "
        f"matmul uses the NVRTC kernels. Tried: {runtime_libs.tried(said)}"
    )


def _alignment(ptr: int) -> int:
    """The largest power of two dividing `ptr`, at most 256."""
    return min(256, ptr & -ptr) if ptr else 256


@dataclass(frozen=True)
class Operand:
    """One operand as cuBLASLt sees it: column-major rows x cols, ld, op."""

    op: int
    rows: int
    cols: int
    ld: int


def as_operand(rows: int, cols: int, s_row: int, s_col: int) -> Operand | None:
    """The layout giving the (rows, cols) column-major matrix whose (i, j) element sits at
    i*s_row + j*s_col (element strides), or None when no layout fits (a copy is needed).
    op N when the rows are the contiguous axis, op T (stored transposed) when the columns are."""
    if s_row == 1 or rows == 1:
        ld = s_col if cols > 1 else rows
        if ld >= rows and (s_row == 1 or rows == 1):
            return Operand(OP_N, rows, cols, max(ld, 1))
    if s_col == 1 or cols == 1:
        ld = s_row if rows > 1 else cols
        if ld >= cols:
            return Operand(OP_T, cols, rows, max(ld, 1))
    return None


def compute_type(dtype: dt.DataType, allow_tf32: bool) -> int:
    if dtype is dt.float64 or dtype is dt.complex128:
        return COMPUTE_64F
    if dtype is dt.float32 and allow_tf32:
        return COMPUTE_32F_FAST_TF32
    return COMPUTE_32F  # float32 exact; float16/bfloat16 accumulate in float32


_plans = plans.CUBLASLT


def plan_for(lt: Any, device_index: int, dtype: dt.DataType, allow_tf32: bool,
             m: int, n: int, k: int, a_ptr: int, a_strides: tuple[int, int],
             b_ptr: int, b_strides: tuple[int, int], out_ptr: int,
             batch: int = 1, a_batch: int = 0, b_batch: int = 0,
             like: Any = None) -> Any:  # fmt: skip
    """The MatmulPlan of out (batch, m, n) contiguous = a (m, k) @ b (k, n), strides in
    elements, for these pointers' alignments; None when no layout or algorithm fits. Run it
    through a `Product`. With `like` (another MatmulPlan), a new plan, not cached, that runs
    `like`'s chosen algorithm, or None when cuBLASLt refuses that algorithm here."""
    # column-major view: out^T (n x m) = b^T (n x k) @ a^T (k x m)
    op_a = as_operand(n, k, b_strides[1], b_strides[0])
    op_b = as_operand(k, m, a_strides[1], a_strides[0])
    if op_a is None or op_b is None or k == 0:
        return None
    size = dtype.itemsize
    # every matrix of a batch must meet the alignment promised to the heuristic
    al_a = min(_alignment(a_ptr), _alignment(a_batch * size)) if batch > 1 else _alignment(a_ptr)
    al_b = min(_alignment(b_ptr), _alignment(b_batch * size)) if batch > 1 else _alignment(b_ptr)
    al_c = _alignment(out_ptr)
    if batch > 1:
        al_c = min(al_c, _alignment(m * n * size))
    compute = compute_type(dtype, allow_tf32)
    key = (device_index, dtype.name, compute, op_a, op_b, n, m, k, batch, b_batch, a_batch,
           al_b, al_a, al_c)  # fmt: skip
    found = _plans.get(key, False) if like is None else False
    if found is not False:
        return found
    from .device import context

    data = _DATA_TYPE[dtype.name]
    scale = _R_64F if compute == COMPUTE_64F else _R_32F
    if dtype.is_complex:  # complex products take complex alpha and beta
        scale = _C_64F if compute == COMPUTE_64F else _C_32F
    plan = lt.plan(
        context(device_index),
        (data, scale, compute),
        (op_a.op, op_a.rows, op_a.cols, op_a.ld, b_batch),
        (op_b.op, op_b.rows, op_b.cols, op_b.ld, a_batch),
        (n, m, batch, m * n),
        (al_b, al_a, al_c),
        WORKSPACE_BYTES,
        HEURISTIC_RESULTS,
        like,
    )
    if like is not None:
        return plan
    if plan is not None and len(plan.workspace_sizes) > 1 and _trial_wanted(m, n, k, batch):
        _trial(plan, device_index, a_ptr, b_ptr, out_ptr)
    with _lock:
        _plans.put(key, plan)
    return plan


class Product:
    """A planned product bound to its device: calling it with (a, b, out) pointers enqueues
    it on the current stream, with a workspace block of that stream's pool when the plan
    needs one (a graph's private pool while capturing). The hot path of a repeated product
    (matmul keeps one per operand layout): slot reads and one native call."""

    __slots__ = ("index", "plan", "pool", "ws_bytes")

    def __init__(self, plan: Any, index: int) -> None:
        from .device import allocator

        self.plan, self.index = plan, index
        self.ws_bytes = int(plan.workspace_bytes)
        self.pool = allocator(index)

    def __call__(self, a_ptr: int, b_ptr: int, out_ptr: int) -> None:
        s = streams._current.get()
        if s is None:
            handle, pool = 0, self.pool
        else:
            if s.device_index != self.index:
                streams.current(self.index)  # raises, naming both devices
            handle, pool = s.ptr, s.capture_pool or self.pool
        if self.ws_bytes:
            ws = pool.allocate(self.ws_bytes, handle)  # back to the stream's cache after
            self.plan(handle, b_ptr, a_ptr, out_ptr, ws.ptr)  # cuBLASLt's order: b^T a^T
        else:
            self.plan(handle, b_ptr, a_ptr, out_ptr)


def _pool_for(stream: Any, device_index: int) -> Any:
    from .device import allocator

    return stream.capture_pool or allocator(device_index)


def _trial_wanted(m: int, n: int, k: int, batch: int) -> bool:
    mode = os.environ.get("PYGPUKIT_CUBLASLT_TRIAL", "auto")
    if mode == "0" or streams.current_stream().capture_pool is not None:
        return False  # a capture cannot time; the heuristic's first stays for good
    flops = 2 * m * n * k * batch
    return flops <= TRIAL_SMALL_FLOPS or (mode == "1" and flops >= TRIAL_MIN_FLOPS)


def _trial(plan: Any, device_index: int, a_ptr: int, b_ptr: int, d_ptr: int) -> None:
    """Time the heuristic's candidates once on this product's own operands (d is the
    output, written again by the real run) and keep the fastest.

    Each timed run follows a pass over a buffer twice the L2's size: the run starts with
    the weights out of L2, as in a decode step that streams each layer's weights once, and
    the GPU is still busy with that pass when the run is queued, so the events around the
    run time the device alone. (Back-to-back runs of a small product time the host's
    launches instead, and on weights already in L2: a different, often slower, pick.)
    Bounded: about TRIAL_BUDGET_MS in all, and one warm-up run per candidate (lazy kernel
    loading). Inside a best-effort task it yields before each timed run, as a sliced op
    does between slices: the trial's device time is many times one product's, and a
    guaranteed task should wait behind one run of it, not the whole trial."""
    stream = streams.current(device_index)
    handle = stream.ptr
    pool = _pool_for(stream, device_index)
    sizes = plan.workspace_sizes
    yielding = slicing.wanted()
    ws = pool.allocate(max(sizes), handle)
    flush = _flush_buffer(device_index)  # freed when the trial returns
    pairs = [(streams.Event(device=device_index), streams.Event(device=device_index))
             for _ in range(TRIAL_REPEATS)]  # fmt: skip

    def timed(i: int, reps: int, warm: bool = True) -> float:
        try:
            if warm:  # kernel loading
                plan.run(i, handle, b_ptr, a_ptr, d_ptr, ws.ptr)
            for start, end in pairs[:reps]:
                if yielding:  # raises TaskCancelled once the task is cancelled
                    slicing.between_slices()
                if flush is not None:
                    _flush(flush)
                start.record()
                plan.run(i, handle, b_ptr, a_ptr, d_ptr, ws.ptr)
                end.record()
            pairs[reps - 1][1].synchronize()
        except RuntimeError:
            return float("inf")  # a candidate that fails is no candidate
        return sum(streams.get_elapsed_time(s, e) for s, e in pairs[:reps]) / reps

    t0 = timed(0, 1)
    if not t0 < TRIAL_BUDGET_MS / 2:
        return  # one product already costs the budget: keep the heuristic's first
    reps = max(1, min(TRIAL_REPEATS, int(TRIAL_BUDGET_MS / (8 * t0))))
    tries = min(len(sizes), int(TRIAL_BUDGET_MS / ((reps + 1) * t0)))
    if tries < 2:
        return
    times = {0: timed(0, reps, warm=False)}
    for i in range(1, tries):
        times[i] = timed(i, reps)
    best = min(times, key=times.__getitem__)
    # the heuristic's order breaks near-ties: a switch must win by a clear margin
    if times[best] < TRIAL_MARGIN * times[0]:
        plan.choose(best)


def _flush_buffer(device_index: int) -> GPUArray | None:
    """A float32 buffer of twice the device's L2, or None when there is no room for it
    (the trial then times with whatever L2 holds)."""
    import pygpukit as gp

    from .device_facts import l2_bytes

    l2 = l2_bytes(device_index)
    if l2 <= 0:
        return None
    try:
        return gp.empty((2 * l2 // 4,), dtype=gp.float32, device=f"cuda:{device_index}")
    except MemoryError:
        return None


def _flush(buffer: GPUArray) -> None:
    """Read and write all of `buffer` on the current stream (evicts what L2 held)."""
    from pygpukit.ops.elementwise import mul_inplace

    mul_inplace(buffer, 0.0)


def gemm(lt: Any, device_index: int, dtype: dt.DataType, allow_tf32: bool,
         m: int, n: int, k: int, a_ptr: int, a_strides: tuple[int, int],
         b_ptr: int, b_strides: tuple[int, int], out_ptr: int,
         batch: int = 1, a_batch: int = 0, b_batch: int = 0) -> bool:  # fmt: skip
    """Run `plan_for`'s product now; False when no layout or algorithm fits (the caller then
    copies or falls back)."""
    plan = plan_for(lt, device_index, dtype, allow_tf32, m, n, k, a_ptr, a_strides, b_ptr,
                    b_strides, out_ptr, batch, a_batch, b_batch)  # fmt: skip
    if plan is None:
        return False
    Product(plan, device_index)(a_ptr, b_ptr, out_ptr)
    return True
