"""The `cuda` provider's reductions, arg-reductions and cumulative scans.

Each kernel follows the calling convention of ``pygpukit._ops.statistical`` (and
``searching`` for argmax/argmin/count_nonzero): `out` is preallocated with the keepdims
shape and result dtype, possibly a strided view. The input is split into kept and reduced
dimensions (`reduce_layout`), and `launch` picks the kernel (see
``kernels/reduction_source.py``): row mode when the reduced elements are the closer ones in
memory, column mode otherwise, split across several blocks (then merged by `_fin`) when the
outputs alone would not fill the GPU.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

from pygpukit import GPUArray, KernelProvider
from pygpukit.core import dtypes as dt

from . import launch_plan, launcher, plans, slicing, streams
from .device_facts import BLOCK, sm_count
from .device_facts import data_ptr as _ptr
from .kernels import reduction_source as rs

MAX_DIMS = 8
#: blocks of 256 per SM a split row reduction launches: one resident wave (the `_row`
#: kernels use 48-62 registers, so 4 fit per SM; 8 made a second, partial wave)
ROW_BLOCKS_PER_SM = 4
#: column reductions (small kernels) aim at this many blocks per SM
COL_BLOCKS_PER_SM = 8
#: reduced lengths from which a row gets a whole block of 256 threads, not one warp (on the
#: H100, rows of 4096 took 0.69x torch's time for argmax with a block, 0.99x with a warp:
#: the block's shared-memory merge and barriers per row cost more than the shorter loop)
ROW_BLOCK_MIN = 8192


def _merge(dims: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Merge neighbouring (size, *strides) dims whose strides make them one run."""
    merged: list[tuple[int, ...]] = []
    for d in dims:
        if merged:
            p = merged[-1]
            if all(ps == cs * d[0] for ps, cs in zip(p[1:], d[1:], strict=True)):
                merged[-1] = (p[0] * d[0], *d[1:])
                continue
        merged.append(d)
    return merged


def _pad(values: list[int]) -> list[int]:
    return values + [0] * (MAX_DIMS - len(values))


def reduce_layout(
    x: GPUArray, out: GPUArray, axes: tuple[int, ...]
) -> tuple[list[int], list[tuple[int, ...]], list[tuple[int, ...]]]:
    """(the PgkRLayout values, kept dims (size, x stride, out stride), reduced dims (size,
    x stride)), size-1 dims dropped and contiguous runs merged; the reduced index runs over
    the reduced dims in C order (what argmax with axis=None returns)."""
    kept = _merge([(n, x.strides[d], out.strides[d]) for d, n in enumerate(x.shape)
                   if d not in axes and n != 1])  # fmt: skip
    red = _merge([(x.shape[d], x.strides[d]) for d in axes if x.shape[d] != 1])
    if len(kept) > MAX_DIMS or len(red) > MAX_DIMS:
        raise NotImplementedError(
            f"cuda reductions take at most {MAX_DIMS} non-mergeable kept and reduced "
            f"dimensions, got shape {x.shape} with strides {x.strides}; make x contiguous"
        )
    nout = math.prod(n for n, *_ in kept)
    nred = math.prod(x.shape[d] for d in axes)
    values = [nout, nred, len(kept), len(red)]
    values += _pad([k[0] for k in kept]) + _pad([k[1] for k in kept]) + _pad([k[2] for k in kept])
    values += _pad([r[0] for r in red]) + _pad([r[1] for r in red])
    return values, kept, red


class _Plan:
    """A reduction's launches for one (kernel, device, layouts, axes, param): everything
    but the pointers and the scratch block, worked out once."""

    __slots__ = ("fin", "grid", "main", "main_fn", "nbytes", "scalars", "slices", "spec",
                 "ws_bytes")  # fmt: skip

    def __init__(self, spec: rs.ReductionSpec) -> None:
        self.spec = spec  # held so that id(spec) in the key stays this spec's
        #: launch plan taking (out, scratch, x) pointers; None: nothing to launch
        self.main: Callable[..., None] | None = None
        #: the merge of split partial states, when split: (out, scratch) pointers
        self.fin: Callable[..., None] | None = None
        self.ws_bytes = 0
        #: bytes of x read (what decides slicing), and what a slice's launch needs: the
        #: main kernel, its grid (blocks in x, in y) and its arguments after the pointers
        self.nbytes = 0
        self.main_fn: launcher.Function | None = None
        self.grid = (1, 1)
        self.scalars: tuple[Any, ...] = ()
        #: pieces -> the sliced launches, made on first use
        self.slices: dict[int, list[Callable[..., None]]] = {}


_plans = plans.REDUCTION


def launch(spec: rs.ReductionSpec, x: GPUArray, out: GPUArray, axes: tuple[int, ...],
           param: float = 0.0) -> None:  # fmt: skip
    """Run reduction `spec` of x over `axes` into the keepdims-shaped `out` (slot reads
    below rather than properties: this runs once per call)."""
    index = out._device.index
    key = (id(spec), index, x._shape, x._strides, out._strides, axes, param)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans.put(key, _new_plan(spec, x, out, axes, param))
    main = plan.main
    if main is None:
        return
    ws = GPUArray.empty((plan.ws_bytes,), dt.uint8, out._device) if plan.ws_bytes else None
    ws_ptr = ws._buffer.ptr if ws is not None else 0
    stream = streams.current_handle(index)
    out_ptr = out._buffer.ptr + out._offset
    x_ptr = x._buffer.ptr + x._offset
    if plan.nbytes <= slicing.SLICE_BYTES or not _sliced(plan, stream, out_ptr, ws_ptr, x_ptr):
        main(stream, out_ptr, ws_ptr, x_ptr)
    if plan.fin is not None:
        plan.fin(stream, out_ptr, ws_ptr)


def _sliced(plan: _Plan, stream: int, out_ptr: int, ws_ptr: int, x_ptr: int) -> bool:
    """The main kernel as runs of its grid's blocks (along y where the grid has enough
    rows of blocks, else along x), each its own gated launch, yielding between them; False
    when it runs whole. Each block does what it does in the whole grid (its index is offset,
    not its work), so the partial states and the results are identical."""
    pieces = slicing.pieces_for_bytes(plan.nbytes)
    if plan.main_fn is None or pieces <= 1:
        return False
    launches = plan.slices.get(pieces)
    if launches is None:
        launches = plan.slices[pieces] = _slice_launches(plan, pieces)
    if len(launches) <= 1:
        return False
    for i, run in enumerate(launches):
        if i:
            slicing.between_slices()
        run(stream, out_ptr, ws_ptr, x_ptr)
    return True


def _slice_launches(plan: _Plan, pieces: int) -> list[Callable[..., None]]:
    """Launch plans of the main kernel, one per run of about 1/pieces of its grid."""
    fn = plan.main_fn
    assert fn is not None
    gx, gy = plan.grid
    along_y = gy >= pieces
    launches = []
    for first, count in slicing.ranges(gy if along_y else gx, pieces):
        grid = (gx, count) if along_y else (count, gy)
        offsets = (0, first) if along_y else (first, 0)
        params = struct.pack(rs.ROW_FORMAT, 0, 0, 0, *plan.scalars, *offsets)
        launches.append(launch_plan.make(fn.context, fn.handle, grid, BLOCK, 0, params,
                                         _MAIN_PTRS))  # fmt: skip
    return launches


def _new_plan(spec: rs.ReductionSpec, x: GPUArray, out: GPUArray, axes: tuple[int, ...],
              param: float) -> _Plan:  # fmt: skip
    """The slow path of `launch`: layout, row or column mode, splits and grids."""
    plan = _Plan(spec)
    lay, kept, red = reduce_layout(x, out, axes)
    nout, nred = lay[0], lay[1]
    if nout == 0:
        return plan
    index = out.device.index
    row = bool(red) and (not kept or abs(red[-1][1]) <= abs(kept[-1][1]))
    # blocks of 256 that fill the GPU
    target = (ROW_BLOCKS_PER_SM if row else COL_BLOCKS_PER_SM) * sm_count(index)
    if row:
        group = BLOCK if nred >= ROW_BLOCK_MIN else 32
        per_block = BLOCK // group
        blocks = -(-nout // per_block)
        splits = 1
        if blocks < target and nred >= group * 64:
            splits = min(-(-target // blocks), -(-nred // (group * 16)))
        chunk = -(-nred // splits)
        chunk = max(16, -(-chunk // 16) * 16)  # split starts stay 16-byte aligned
        splits = max(1, -(-nred // chunk))
        grid: Any = -(-nout * splits // per_block)
        kernel = spec.row
    else:
        group = 1
        tiles = -(-nout // BLOCK)
        splits = 1
        if tiles < target and nred >= 64:
            splits = min(-(-target // tiles), -(-nred // 32), 65535)
        chunk = max(1, -(-nred // splits))
        splits = max(1, -(-nred // chunk))
        grid = (tiles, splits)
        kernel = spec.col
    main = launcher.function(index, kernel, spec.source, rs.ROW_FORMAT)
    plan.scalars = (*lay, splits, chunk, group, param)
    params = struct.pack(rs.ROW_FORMAT, 0, 0, 0, *plan.scalars, 0, 0)
    plan.main = launch_plan.make(main.context, main.handle, grid, BLOCK, 0, params, _MAIN_PTRS)
    plan.main_fn = main
    plan.grid = grid if isinstance(grid, tuple) else (grid, 1)
    plan.nbytes = nout * nred * x.dtype.itemsize
    if splits > 1:
        plan.ws_bytes = nout * splits * rs.STATE_BYTES
        fin = launcher.function(index, spec.fin, spec.source, rs.FIN_FORMAT)
        params = struct.pack(rs.FIN_FORMAT, 0, 0, *lay, splits, param)
        fin_grid = -(-nout * 32 // BLOCK)
        plan.fin = launch_plan.make(fin.context, fin.handle, fin_grid, BLOCK, 0, params,
                                    _FIN_PTRS)  # fmt: skip
    return plan


_MAIN_PTRS = [(0, "P"), (8, "P"), (16, "P")]  # the kernels' first parameters: out, scratch, x
_FIN_PTRS = [(0, "P"), (8, "P")]  # out, scratch


def _check(op: str, x: GPUArray, out: GPUArray) -> None:
    if x.dtype not in rs.ACCEPTED:
        raise TypeError(f"the cuda backend has no {op} kernel for {x.dtype.name}")
    if out.dtype.is_float8:
        raise TypeError(f"the cuda backend cannot write {op} results as {out.dtype.name}")


def _reduction(op: str) -> Any:
    specs: dict[tuple[str, str], rs.ReductionSpec] = {}  # (x, out) dtype names -> kernel

    def kernel(x: GPUArray, out: GPUArray, axes: tuple[int, ...], **params: Any) -> None:
        spec = specs.get((x._dtype.name, out._dtype.name))
        if spec is None:  # checked once per dtype pair
            _check(op, x, out)
            spec = specs[(x.dtype.name, out.dtype.name)] = rs.reduction_kernel(
                op, x.dtype, out.dtype
            )
        param = float(params.get("correction", 0.0)) if params else 0.0
        launch(spec, x, out, axes if type(axes) is tuple else tuple(axes), param)

    kernel.__name__ = f"cuda_{op}"
    return kernel


def _arg_reduction(op: str) -> Any:
    def kernel(x: GPUArray, out: GPUArray, axis: int | None) -> None:
        _check(op, x, out)
        if out.dtype is not dt.int64:
            raise TypeError(f"{op} writes int64 indices, got an output of {out.dtype.name}")
        axes = tuple(range(x.ndim)) if axis is None else (axis,)
        launch(rs.reduction_kernel(op, x.dtype, dt.int64), x, out, axes)

    kernel.__name__ = f"cuda_{op}"
    return kernel


def _cumulative(op: str) -> Any:
    def kernel(x: GPUArray, out: GPUArray, axis: int, include_initial: bool) -> None:
        _check(op, x, out)
        name, source = rs.scan_kernel(op, x.dtype, out.dtype)
        others = tuple(d for d in range(x.ndim) if d != axis)
        kept = _merge([(x.shape[d], x.strides[d], out.strides[d]) for d in others
                       if x.shape[d] != 1])  # fmt: skip
        if len(kept) > MAX_DIMS:
            raise NotImplementedError(f"{op}: too many non-mergeable dimensions in {x.shape}")
        nrows = math.prod(k[0] for k in kept)
        if nrows == 0:
            return
        lay = [nrows, 0, len(kept), 0]
        lay += _pad([k[0] for k in kept]) + _pad([k[1] for k in kept]) + _pad([k[2] for k in kept])
        lay += [0] * (2 * MAX_DIMS)
        index = out.device.index
        fn = launcher.function(index, name, source, rs.SCAN_FORMAT)
        fn.launch((-(-nrows * 32 // BLOCK),), (BLOCK,), (
            _ptr(out), _ptr(x), *lay, x.shape[axis], x.strides[axis], out.strides[axis],
            int(bool(include_initial)),
        ))  # fmt: skip

    kernel.__name__ = f"cuda_{op}"
    return kernel


def register(provider: KernelProvider) -> None:
    """Add the reductions, argmax/argmin, count_nonzero and the scans to `provider`."""
    from . import complex_planes

    for op in ("sum", "prod", "mean", "var", "std", "max", "min", "all", "any",
               "count_nonzero"):  # fmt: skip
        if op in complex_planes.REDUCTIONS:  # complex data: each part reduced on its own
            kernel = complex_planes.reduction(op, _reduction(op))
            provider.add(op, kernel, (*rs.ACCEPTED, *dt.COMPLEX_DTYPES))
        else:
            provider.add(op, _reduction(op), rs.ACCEPTED)
    for op in ("argmax", "argmin"):
        provider.add(op, _arg_reduction(op), rs.ACCEPTED)
    provider.add("cumulative_sum", complex_planes.scan(_cumulative("cumulative_sum")),
                 (*rs.ACCEPTED, *dt.COMPLEX_DTYPES))  # fmt: skip
    provider.add("cumulative_prod", _cumulative("cumulative_prod"), rs.ACCEPTED)
