"""cuBLASLt, opened at run time with dlopen: matrix products of the float dtypes.

Nothing is linked at build time. The library is looked for in ``PYGPUKIT_CUBLASLT_PATH``
(a file or folder), then the ``nvidia-cublas`` wheel's lib folder (found through
``importlib.metadata``), then the system (``libcublasLt.so.13``, ``libcublasLt.so.12``);
``status()`` says in one line what was found or why not, and ``library()`` is None when
it is absent (the NVRTC kernels of ``matmul`` then serve every dtype).

``Lt.matmul`` runs ``out = a @ b`` for one (..., M, K) @ (..., K, N) problem whose
operands are strided views; cuBLASLt is column-major, so it computes ``out^T = b^T a^T``
and expresses each operand through the op flag and leading dimension of its layout
(transposed views need no copy). Plans (descriptors, layouts, the candidate algorithms and
the one chosen) are cached per shape, strides and alignment, with every constant argument of
``cublasLtMatmul`` prebuilt, so a repeated product costs one ctypes call. With
``PYGPUKIT_CUBLASLT_TRIAL=1`` a large product's first run also times the heuristic's
candidates once (``TRIAL_*``) and keeps a clearly faster one. It is off by default: on the
H100 (square 4096 products, all four float modes) the heuristic's first was within timing
noise of the best candidate and of PyTorch, and the trial cost up to ~110 ms per new shape.

Workspace: on the legacy default stream every product shares one block per device
(``WORKSPACE_BYTES``, kept from the pool; kernels there run in order). Memory statistics
count it as cached, not used, and ``free_cached`` gives it back (`account_workspace`,
`release_workspace`). On another stream each product takes a block tied to that stream.
"""

from __future__ import annotations

import ctypes
import importlib.metadata as md
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pygpukit import _dtypes as dt

from . import streams

#: Wheels that ship cuBLASLt, newest CUDA first, and the names tried after them.
DISTRIBUTIONS = ("nvidia-cublas", "nvidia-cublas-cu13", "nvidia-cublas-cu12")
SYSTEM_NAMES = ("libcublasLt.so.13", "libcublasLt.so.12")
#: Workspace handed to every product (what cuBLASLt's Hopper kernels like to have).
WORKSPACE_BYTES = 32 << 20
#: Heuristic results asked for per plan: the candidates of the timed trial.
HEURISTIC_RESULTS = 8
#: With the trial on, products of at least this many flops (2*M*N*K*batch) time their
#: candidates once, on their first run: about 2048^3 and up, where the kernel sets the pace.
TRIAL_MIN_FLOPS = 2 * 2048**3
#: Device time the trial may spend (milliseconds, roughly), timed runs per candidate, and
#: how much faster than the heuristic's first another candidate must be to replace it.
TRIAL_BUDGET_MS = 150.0
TRIAL_REPEATS = 3
TRIAL_MARGIN = 0.95  # the trial's single samples scatter by about 3% on the H100

# cudaDataType_t, cublasComputeType_t, and the attribute numbers of cublasLt.h
_R_32F, _R_64F, _R_16F, _R_16BF = 0, 1, 2, 14
COMPUTE_32F, COMPUTE_64F, COMPUTE_32F_FAST_TF32 = 68, 70, 77
_OP_N, _OP_T = 0, 1
_DESC_TRANSA, _DESC_TRANSB = 3, 4
_LAYOUT_BATCH_COUNT, _LAYOUT_BATCH_STRIDE = 5, 6
_PREF_MAX_WORKSPACE = 1
_PREF_ALIGN = (5, 6, 7, 8)  # min alignment of A, B, C, D in bytes
_SUCCESS = 0

_DATA_TYPE = {"float16": _R_16F, "bfloat16": _R_16BF, "float32": _R_32F, "float64": _R_64F}
#: dtypes cuBLASLt serves here (integers go to the NVRTC kernels)
DTYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


class CublasLtError(RuntimeError):
    """A cuBLASLt call returned an error status."""


class _HeuristicResult(ctypes.Structure):
    _fields_ = [
        ("algo", ctypes.c_uint64 * 8),
        ("workspace_size", ctypes.c_size_t),
        ("state", ctypes.c_int),
        ("waves", ctypes.c_float),
        ("reserved", ctypes.c_int * 4),
    ]


def candidates() -> list[str]:
    """Paths and names to dlopen, in order."""
    out: list[str] = []
    env = os.environ.get("PYGPUKIT_CUBLASLT_PATH")
    if env:
        p = Path(env)
        out += sorted(str(f) for f in p.glob("libcublasLt.so*")) if p.is_dir() else [env]
    for name in DISTRIBUTIONS:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        files = [f for f in dist.files or () if Path(str(f)).name.startswith("libcublasLt.so")]
        # the versioned name first: it is the real file in the wheel
        for f in sorted(files, key=lambda f: -len(str(f))):
            out.append(str(dist.locate_file(f)))
    return out + list(SYSTEM_NAMES)


_lock = threading.Lock()
_tried = False
_lib: Lt | None = None
_status = "cuBLASLt not looked for yet"


def library() -> Lt | None:
    """The loaded cuBLASLt, or None when it is not installed (see `status`)."""
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


def _open(paths: list[str]) -> tuple[Lt | None, str]:
    errors = []
    for path in paths:
        try:
            cdll = ctypes.CDLL(path)
        except OSError as exc:
            errors.append(f"{path}: {exc}")
            continue
        try:
            lt = Lt(cdll, path)
        except (AttributeError, CublasLtError) as exc:
            errors.append(f"{path}: {exc}")
            continue
        return lt, f"cuBLASLt {lt.version} from {path}"
    tried = "; ".join(errors[-3:]) if errors else "nothing to try"
    return None, (
        "cuBLASLt not found (pip install nvidia-cublas, or set PYGPUKIT_CUBLASLT_PATH); "
        f"matmul uses the NVRTC kernels. Tried: {tried}"
    )


def _alignment(ptr: int) -> int:
    """The largest power of two dividing `ptr`, at most 256."""
    return min(256, ptr & -ptr) if ptr else 256


@dataclass(frozen=True)
class Operand:
    """One operand as cuBLASLt sees it: column-major rows x cols, ld, op, batch stride."""

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
            return Operand(_OP_N, rows, cols, max(ld, 1))
    if s_col == 1 or cols == 1:
        ld = s_row if rows > 1 else cols
        if ld >= cols:
            return Operand(_OP_T, cols, rows, max(ld, 1))
    return None


class Lt:
    """The entry points of one loaded libcublasLt, a handle per device, and per-shape plans."""

    def __init__(self, cdll: ctypes.CDLL, path: str) -> None:
        self.path = path
        self.cdll = cdll
        vp, i32, u64, i64, sz = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                 ctypes.c_int64, ctypes.c_size_t)  # fmt: skip
        sigs = {
            "cublasLtCreate": [ctypes.POINTER(vp)],
            "cublasLtMatmulDescCreate": [ctypes.POINTER(vp), i32, i32],
            "cublasLtMatmulDescSetAttribute": [vp, i32, vp, sz],
            "cublasLtMatrixLayoutCreate": [ctypes.POINTER(vp), i32, u64, u64, i64],
            "cublasLtMatrixLayoutSetAttribute": [vp, i32, vp, sz],
            "cublasLtMatmulPreferenceCreate": [ctypes.POINTER(vp)],
            "cublasLtMatmulPreferenceSetAttribute": [vp, i32, vp, sz],
            "cublasLtMatmulPreferenceDestroy": [vp],
            "cublasLtMatmulAlgoGetHeuristic": [
                vp,
                vp,
                vp,
                vp,
                vp,
                vp,
                vp,
                i32,
                ctypes.POINTER(_HeuristicResult),
                ctypes.POINTER(i32),
            ],
            "cublasLtMatmul": [vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, sz, vp],
        }
        for name, args in sigs.items():
            fn = getattr(cdll, name)
            fn.argtypes = args
            fn.restype = i32
        cdll.cublasLtGetVersion.restype = sz
        cdll.cublasLtGetVersion.argtypes = []
        cdll.cublasLtGetStatusString.restype = ctypes.c_char_p
        cdll.cublasLtGetStatusString.argtypes = [i32]
        v = int(cdll.cublasLtGetVersion())
        self.version = f"{v // 10000}.{(v // 100) % 100}.{v % 100}"
        self._matmul = cdll.cublasLtMatmul  # looked up once: the hot path calls it directly
        self._handles: dict[int, int] = {}
        self._plans: dict[tuple[Any, ...], _Plan | None] = {}
        self._workspaces: dict[int, _Workspace] = {}
        self._lock = threading.Lock()

    def check(self, status: int, what: str) -> None:
        if status != _SUCCESS:
            text = self.cdll.cublasLtGetStatusString(status)
            raise CublasLtError(f"{what} failed: {text.decode() if text else status}")

    def _handle(self, device_index: int) -> int:
        h = self._handles.get(device_index)
        if h is None:
            p = ctypes.c_void_p()
            self.check(self.cdll.cublasLtCreate(ctypes.byref(p)), "cublasLtCreate")
            h = self._handles[device_index] = int(p.value or 0)
        return h

    # -- workspace -----------------------------------------------------------------------
    def _shared_workspace(self, device_index: int) -> int:
        """The pointer of the device's default-stream workspace, allocated on first use."""
        ws = self._workspaces.get(device_index)
        if ws is None:
            from .device import allocator

            with self._lock:
                ws = self._workspaces.get(device_index)
                if ws is None:
                    buf = allocator(device_index).allocate(WORKSPACE_BYTES)
                    ws = self._workspaces[device_index] = _Workspace(buf)
        return ws.ptr

    def workspace_bytes(self, device_index: int) -> int:
        ws = self._workspaces.get(device_index)
        return ws.reserved if ws is not None else 0

    def release_workspace(self, device_index: int) -> int:
        """Drop the shared workspace (back to the pool); the bytes it held."""
        with self._lock:
            ws = self._workspaces.pop(device_index, None)
        return ws.reserved if ws is not None else 0

    # -- plans ---------------------------------------------------------------------------
    def _set(self, fn: Any, obj: int, attr: int, value: Any, what: str) -> None:
        self.check(fn(obj, attr, ctypes.byref(value), ctypes.sizeof(value)), what)

    def _layout(self, dtype: int, o: Operand, batch: int, stride: int) -> int:
        p = ctypes.c_void_p()
        status = self.cdll.cublasLtMatrixLayoutCreate(ctypes.byref(p), dtype, o.rows, o.cols, o.ld)
        self.check(status, "cublasLtMatrixLayoutCreate")
        if batch > 1:
            set_attr = self.cdll.cublasLtMatrixLayoutSetAttribute
            self._set(set_attr, p.value, _LAYOUT_BATCH_COUNT, ctypes.c_int32(batch), "batch count")
            self._set(set_attr, p.value, _LAYOUT_BATCH_STRIDE, ctypes.c_int64(stride),
                      "batch stride")  # fmt: skip
        return int(p.value or 0)

    def plan(self, device_index: int, key: tuple[Any, ...]) -> _Plan | None:
        """The cached plan of one problem (None when cuBLASLt has no algorithm for it)."""
        found = self._plans.get(key, False)
        if found is not False:
            return found  # type: ignore[return-value]
        with self._lock:
            if len(self._plans) > 4096:
                self._plans.clear()  # descriptors leak a little; shapes rarely churn so much
            plan = self._make_plan(device_index, *key[1:])
            self._plans[key] = plan
        return plan

    def _make_plan(self, device_index: int, dtype_name: str, compute: int, a: Operand,
                   b: Operand, m: int, n: int, k: int, batch: int, sa: int, sb: int,
                   aligns: tuple[int, ...]) -> _Plan | None:  # fmt: skip
        data = _DATA_TYPE[dtype_name]
        scale = _R_64F if compute == COMPUTE_64F else _R_32F
        desc = ctypes.c_void_p()
        self.check(self.cdll.cublasLtMatmulDescCreate(ctypes.byref(desc), compute, scale),
                   "cublasLtMatmulDescCreate")  # fmt: skip
        set_desc = self.cdll.cublasLtMatmulDescSetAttribute
        self._set(set_desc, desc.value, _DESC_TRANSA, ctypes.c_int32(a.op), "transa")
        self._set(set_desc, desc.value, _DESC_TRANSB, ctypes.c_int32(b.op), "transb")
        la = self._layout(data, a, batch, sa)
        lb = self._layout(data, b, batch, sb)
        lc = self._layout(data, Operand(_OP_N, m, n, m), batch, m * n)
        pref = ctypes.c_void_p()
        self.check(self.cdll.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "preference")
        set_pref = self.cdll.cublasLtMatmulPreferenceSetAttribute
        self._set(set_pref, pref.value, _PREF_MAX_WORKSPACE, ctypes.c_uint64(WORKSPACE_BYTES),
                  "workspace preference")  # fmt: skip
        for attr, align in zip(_PREF_ALIGN, aligns, strict=True):
            self._set(set_pref, pref.value, attr, ctypes.c_uint32(align), "alignment preference")
        results = (_HeuristicResult * HEURISTIC_RESULTS)()
        count = ctypes.c_int(0)
        status = self.cdll.cublasLtMatmulAlgoGetHeuristic(
            self._handle(device_index), desc.value, la, lb, lc, lc, pref.value,
            HEURISTIC_RESULTS, results, ctypes.byref(count))  # fmt: skip
        self.cdll.cublasLtMatmulPreferenceDestroy(pref.value)
        usable = [i for i in range(max(0, min(count.value, HEURISTIC_RESULTS)))
                  if results[i].state == _SUCCESS
                  and results[i].workspace_size <= WORKSPACE_BYTES]  # fmt: skip
        if status != _SUCCESS or not usable:
            return None
        alpha: Any = ctypes.c_double(1.0) if scale == _R_64F else ctypes.c_float(1.0)
        beta: Any = ctypes.c_double(0.0) if scale == _R_64F else ctypes.c_float(0.0)
        plan = _Plan(self._handle(device_index), int(desc.value or 0), la, lb, lc, results,
                     usable, alpha, beta)  # fmt: skip
        plan.pending = (len(usable) > 1 and 2 * m * n * k * batch >= TRIAL_MIN_FLOPS
                        and os.environ.get("PYGPUKIT_CUBLASLT_TRIAL", "0") == "1")  # fmt: skip
        return plan

    # -- running -------------------------------------------------------------------------
    def run(self, device_index: int, plan: _Plan, a_ptr: int, b_ptr: int, d_ptr: int) -> None:
        """Enqueue the product on the device's current stream (where the kernels go too).
        The hot path: every argument but the pointers and the stream is prebuilt."""
        stream = streams.current_handle(device_index)
        if plan.pending:
            self._trial(device_index, plan, a_ptr, b_ptr, d_ptr, stream)
        status = self._launch(device_index, plan, plan.choice, a_ptr, b_ptr, d_ptr, stream)
        if status != _SUCCESS:
            self.check(status, "cublasLtMatmul")

    def _launch(self, device_index: int, plan: _Plan, i: int, a_ptr: int, b_ptr: int,
                d_ptr: int, stream: int) -> int:  # fmt: skip
        nbytes = plan.ws_sizes[i]
        hold = None
        if nbytes == 0:
            ws: int | None = None
        elif stream == 0:
            ws = self._shared_workspace(device_index)
        else:
            # a block tied to that stream: it returns to the pool once the stream passes
            from .device import allocator

            hold = streams.track(allocator(device_index).allocate(nbytes))
            ws = hold.ptr
        status: int = self._matmul(
            plan.handle, plan.desc, plan.alpha_ref, a_ptr, plan.la, b_ptr, plan.lb,
            plan.beta_ref, d_ptr, plan.lc, d_ptr, plan.lc, plan.algo_refs[i], ws, nbytes,
            stream or None)  # fmt: skip
        del hold  # after the enqueue: a stream-tied block is retired behind this product
        return status

    def _trial(self, device_index: int, plan: _Plan, a_ptr: int, b_ptr: int, d_ptr: int,
               stream: int) -> None:  # fmt: skip
        """Time the heuristic's candidates once on this product's own operands (d is the
        output, written again by the real run) and keep the fastest. Bounded: about
        TRIAL_BUDGET_MS in all, whatever the size, and one warm-up run per candidate
        (lazy kernel loading)."""
        plan.pending = False
        start = streams.Event(device=device_index)
        end = streams.Event(device=device_index)

        def timed(i: int, reps: int, warm: bool = True) -> float:
            launch = self._launch
            if warm and launch(device_index, plan, i, a_ptr, b_ptr, d_ptr, stream) != _SUCCESS:
                return float("inf")  # the warm-up failed: not a candidate
            start.record()
            for _ in range(reps):
                self._launch(device_index, plan, i, a_ptr, b_ptr, d_ptr, stream)
            end.record()
            end.synchronize()
            return streams.get_elapsed_time(start, end) / reps

        t0 = timed(0, 1)
        if not t0 < TRIAL_BUDGET_MS / 2:
            return  # one product already costs the budget: keep the heuristic's first
        reps = max(1, min(TRIAL_REPEATS, int(TRIAL_BUDGET_MS / (8 * t0))))
        tries = min(len(plan.choices), int(TRIAL_BUDGET_MS / ((reps + 1) * t0)))
        if tries < 2:
            return
        times = {0: t0 if reps == 1 else timed(0, reps, warm=False)}
        for i in range(1, tries):
            times[i] = timed(i, reps)
        best = min(times, key=times.__getitem__)
        # the heuristic's order breaks near-ties: a switch must win by a clear margin
        if times[best] < TRIAL_MARGIN * times[0]:
            plan.choice = best
        plan.trial_ms = times


class _Workspace:
    """The shared default-stream workspace of one device, and what the pool charged."""

    __slots__ = ("buffer", "ptr", "reserved")

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer
        self.ptr = int(buffer.ptr)
        block = getattr(buffer, "block", None)  # the Rust pool rounds to a capacity
        size = getattr(buffer, "size", None)  # the Python cache rounds to a size
        self.reserved = int(block.capacity if block is not None else size or buffer.nbytes)


class _Plan:
    """One problem's descriptors and candidate algorithms, with the cublasLtMatmul arguments
    that never change prebuilt (ctypes objects, so the call converts nothing for them)."""

    __slots__ = ("algo_refs", "alpha", "alpha_ref", "beta", "beta_ref", "choice", "choices",
                 "desc", "handle", "la", "lb", "lc", "pending", "results", "trial_ms",
                 "ws_sizes")  # fmt: skip

    def __init__(self, handle: int, desc: int, la: int, lb: int, lc: int, results: Any,
                 usable: list[int], alpha: Any, beta: Any) -> None:  # fmt: skip
        vp = ctypes.c_void_p
        self.handle, self.desc = vp(handle), vp(desc)
        self.la, self.lb, self.lc = vp(la), vp(lb), vp(lc)
        self.results = results  # kept alive: algo_refs point into it
        #: indices into results, the heuristic's order; `choice` indexes this list
        self.choices = usable
        self.algo_refs = [ctypes.byref(results[i].algo) for i in usable]
        self.ws_sizes = [int(results[i].workspace_size) for i in usable]
        self.alpha, self.beta = alpha, beta
        self.alpha_ref, self.beta_ref = ctypes.byref(alpha), ctypes.byref(beta)
        self.choice = 0
        self.pending = False
        self.trial_ms: dict[int, float] = {}


def account_workspace(device_index: int, stats: dict[str, Any]) -> None:
    """Move the shared workspace from `used` to `cached` in a device's memory statistics:
    it is scratch that `free_cached` gives back, not memory an array holds."""
    lt = _lib
    n = lt.workspace_bytes(device_index) if lt is not None else 0
    stats["cublaslt_workspace"] = n
    if n:
        stats["used"] = stats.get("used", 0) - n
        stats["cached"] = stats.get("cached", 0) + n


def release_workspace(device_index: int) -> int:
    """Give a device's shared workspace back to the pool (before the pool's cache is freed)."""
    lt = _lib
    return lt.release_workspace(device_index) if lt is not None else 0


def compute_type(dtype: dt.DataType, allow_tf32: bool) -> int:
    if dtype is dt.float64:
        return COMPUTE_64F
    if dtype is dt.float32 and allow_tf32:
        return COMPUTE_32F_FAST_TF32
    return COMPUTE_32F  # float32 exact; float16/bfloat16 accumulate in float32


def plan_for(lt: Lt, device_index: int, dtype: dt.DataType, allow_tf32: bool,
             m: int, n: int, k: int, a_ptr: int, a_strides: tuple[int, int],
             b_ptr: int, b_strides: tuple[int, int], out_ptr: int,
             batch: int = 1, a_batch: int = 0, b_batch: int = 0) -> _Plan | None:  # fmt: skip
    """The plan of out (batch, m, n) contiguous = a (m, k) @ b (k, n), strides in elements,
    for these pointers' alignments; None when no layout or algorithm fits. Run it with
    ``lt.run(device_index, plan, b_ptr, a_ptr, out_ptr)`` (cuBLASLt's operands swapped)."""
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
    aligns = (al_b, al_a, al_c, al_c)
    key = (device_index, dtype.name, compute_type(dtype, allow_tf32), op_a, op_b, n, m, k,
           batch, b_batch, a_batch, aligns)  # fmt: skip
    from .device import context

    context(device_index).make_current()
    return lt.plan(device_index, key)


def gemm(lt: Lt, device_index: int, dtype: dt.DataType, allow_tf32: bool,
         m: int, n: int, k: int, a_ptr: int, a_strides: tuple[int, int],
         b_ptr: int, b_strides: tuple[int, int], out_ptr: int,
         batch: int = 1, a_batch: int = 0, b_batch: int = 0) -> bool:  # fmt: skip
    """Run `plan_for`'s product now; False when no layout or algorithm fits (the caller then
    copies or falls back)."""
    plan = plan_for(lt, device_index, dtype, allow_tf32, m, n, k, a_ptr, a_strides, b_ptr,
                    b_strides, out_ptr, batch, a_batch, b_batch)  # fmt: skip
    if plan is None:
        return False
    lt.run(device_index, plan, b_ptr, a_ptr, out_ptr)
    return True
