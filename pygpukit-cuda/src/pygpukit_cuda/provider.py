"""The `cuda` kernel provider: copy, fill, the elementwise ops and where, on GPU arrays.

Each kernel function here follows the core's calling convention for its op (see
``pygpukit._ops.elementwise`` and ``copying``), turns its operands into a layout (shape and
byte strides, contiguous dimensions merged) and launches the generated instance for the
op and compute dtype.
"""

from __future__ import annotations

import functools
import math
import re
import struct
from collections.abc import Callable
from typing import Any

from pygpukit import GPUArray, KernelProvider
from pygpukit.backend import BINARY, UNARY
from pygpukit.core import dtypes as dt

from . import cast, launch_plan, launcher, movement, plans, slicing, streams
from . import fresh as fresh_api
from .device import context
from .device_facts import BLOCK, sm_count
from .dims import merge_dims
from .kernels import source
from .kernels.ctypes_table import ctype
from .kernels.preamble import MAX_DIMS, MAX_OPERANDS


def layout(shape: tuple[int, ...], strides: list[tuple[int, ...]]) -> tuple[int, list[int]]:
    """(n, the PgkLayout values): size-1 dimensions dropped and contiguous runs merged, so
    a contiguous array is one dimension however many it has."""
    n = math.prod(shape)
    merged = merge_dims(shape, strides)
    if len(merged) > MAX_DIMS:
        raise NotImplementedError(
            f"cuda kernels take at most {MAX_DIMS} non-mergeable dimensions, got {len(merged)}; "
            "make the array contiguous first"
        )
    shape_v = [s for s, _ in merged] + [1] * (MAX_DIMS - len(merged))
    values = [n, len(merged), *shape_v]
    for k in range(MAX_OPERANDS):
        row = [st[k] for _, st in merged] if k < len(strides) else []
        values += row + [0] * (MAX_DIMS - len(row))
    return n, values


def scalar_for(dtype: dt.DataType, value: Any) -> Any:
    """A Python scalar as the kernel argument of `dtype`'s math type."""
    fmt = ctype(dtype).scalar_fmt
    if fmt == "?":
        return bool(value)
    if fmt in "fd":
        return float(value)
    v = int(value)
    bits = dtype.itemsize * 8
    v &= (1 << bits) - 1  # wrap into range, as a C cast would
    if fmt.islower() and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _grid(device_index: int, n: int) -> int:
    return max(1, min(-(-n // BLOCK), sm_count(device_index) * 32))


def run(spec: source.KernelSpec, out: GPUArray, inputs: list[Any], whole: bool = False) -> None:
    """Launch `spec` writing `out`, each input a GPUArray (broadcast to out) or a scalar;
    in slices when the op is large and runs in a best-effort task (see slicing.py), unless
    `whole`.

    The hot path of every elementwise op: everything but the pointers and scalar values is
    decided once per (kernel, shapes, strides, dtypes, scalar positions, alignment) and kept
    as a `_Plan` whose launch plan writes just those values (slot reads below rather than
    properties: this runs once per launch)."""
    p = out._buffer.ptr + out._offset
    values = [p]  # the output pointer, then each input's pointer or scalar
    key: list[Any] = [id(spec), out._device.index, out._shape, out._strides, out._dtype.name]
    for x in inputs:
        if isinstance(x, GPUArray):
            q = x._buffer.ptr + x._offset
            p |= q
            values.append(q)
            key.append(x._strides)
            key.append(x._dtype.name)
        else:
            values.append(x)
            key.append(None)
    key.append(not p & 15)  # every array 16-byte aligned: the vector path may apply
    plan = _plans.get(tuple(key))
    if plan is None:
        plan = _new_plan(tuple(key), spec, out, inputs, values)
    if plan.nbytes > slicing.SLICE_BYTES and not whole and _sliced(plan, spec, out, inputs):
        return
    launch = plan.launch
    if launch is not None:
        launch(streams.current_handle(out._device.index), *values)


def run1(spec: source.KernelSpec, out: GPUArray, x: GPUArray) -> None:
    """`run` for one array input (unary ops): the same plan key, built as one tuple."""
    p = out._buffer.ptr + out._offset
    q = x._buffer.ptr + x._offset
    plan = _plans.get((id(spec), out._device.index, out._shape, out._strides, out._dtype.name,
                       x._strides, x._dtype.name, not (p | q) & 15))  # fmt: skip
    if plan is None or plan.nbytes > slicing.SLICE_BYTES:  # new, or perhaps to slice
        run(spec, out, [x])
    elif plan.launch is not None:
        plan.launch(streams.current_handle(out._device.index), p, q)


def run2(spec: source.KernelSpec, out: GPUArray, x1: GPUArray, x2: GPUArray) -> None:
    """`run` for two array inputs (binary ops): the same plan key, built as one tuple."""
    p = out._buffer.ptr + out._offset
    q1 = x1._buffer.ptr + x1._offset
    q2 = x2._buffer.ptr + x2._offset
    plan = _plans.get((id(spec), out._device.index, out._shape, out._strides, out._dtype.name,
                       x1._strides, x1._dtype.name, x2._strides, x2._dtype.name,
                       not (p | q1 | q2) & 15))  # fmt: skip
    if plan is None or plan.nbytes > slicing.SLICE_BYTES:  # new, or perhaps to slice
        run(spec, out, [x1, x2])
    elif plan.launch is not None:
        plan.launch(streams.current_handle(out._device.index), p, q1, q2)


class _Plan:
    """A kernel's launch plan for operands of given layouts (None: an empty output)."""

    __slots__ = ("launch", "nbytes", "spec")

    def __init__(self, spec: source.KernelSpec, launch: Callable[..., None] | None,
                 nbytes: int) -> None:  # fmt: skip
        self.spec = spec  # held so that id(spec) in the key stays this spec's
        self.launch = launch
        #: bytes the launch reads and writes (what decides slicing)
        self.nbytes = nbytes


def _sliced(plan: _Plan, spec: source.KernelSpec, out: GPUArray, inputs: list[Any]) -> bool:
    """Run the op as blocks of `out` (and the same blocks of each input), each its own
    gated launch of the same kernel, yielding between them; False when it runs whole.
    Every element is computed by the same code as in the whole launch: the results are
    identical."""
    pieces = slicing.pieces_for_bytes(plan.nbytes)
    if pieces <= 1:
        return False
    shape = out.shape
    arrays = [x if not isinstance(x, GPUArray) or x.shape == shape else x.broadcast_to(shape)
              for x in inputs]  # fmt: skip
    parts = slicing.blocks(shape, pieces)
    if len(parts) <= 1:
        return False
    for i, idx in enumerate(parts):
        if i:
            slicing.between_slices()
        ins = [x[idx] if isinstance(x, GPUArray) else x for x in arrays]
        run(spec, out[idx], ins, whole=True)
    return True


_plans = plans.ELEMENTWISE


def _new_plan(
    key: tuple[Any, ...], spec: source.KernelSpec, out: GPUArray, inputs: list[Any],
    values: list[Any],
) -> _Plan:  # fmt: skip
    """The slow path of `run`: layout, grid, vector flag and the launch plan."""
    arrays = [out] + [x for x in inputs if isinstance(x, GPUArray)]
    ptrs = [values[0]]  # as the layout checks want them: 0 for a scalar
    ptrs += [v if isinstance(x, GPUArray) else 0 for x, v in zip(inputs, values[1:], strict=True)]
    n, lay = layout(out.shape, [x.strides for x in arrays])
    codes, zeros = [], []
    for x, as_dtype in zip(inputs, spec.inputs, strict=True):
        is_array = isinstance(x, GPUArray)
        codes.append(ctype(x.dtype).code if is_array else 0)
        zeros.append(scalar_for(as_dtype, 0))
    # Scalars have no strides: their layout rows stay zero, so shift array rows into place.
    if len(arrays) != len(inputs) + 1:
        lay = _spread(lay, [True] + [isinstance(x, GPUArray) for x in inputs])
    fn = launcher.function(out.device.index, spec.name, spec.source, spec.arg_format)
    flag = _vector_path(n, lay, arrays, ptrs, spec.vec)
    if n == 0:
        grid = 0
    elif flag is not None:
        # the kernel's vector path: one group of spec.vec elements per thread, 16-byte
        # loads and stores, 32-bit indices (ndim 0: one dimension, -2: rows)
        lay[1] = flag
        grid = -(-n // (BLOCK * spec.vec))
    else:
        grid = _grid(out.device.index, n)
    nptr = len(inputs) + 1
    template = struct.pack(spec.arg_format, *([0] * nptr), *lay, *codes, *zeros)
    # every operand's pointer leads the format; the scalar arguments are its last items,
    # one per input: a call writes each input's pointer or its scalar
    items = _items(spec.arg_format)
    scalar_items = items[-len(inputs) :]
    slots = [(items[0][1], "P")]
    for k, x in enumerate(inputs):
        if isinstance(x, GPUArray):
            slots.append((items[k + 1][1], "P"))
        else:
            code, offset = scalar_items[k]
            slots.append((offset, code))
    launch = None
    if grid:
        launch = launch_plan.make(fn.context, fn.handle, grid, BLOCK, 0, template, slots)
    nbytes = n * sum(x.dtype.itemsize for x in arrays)
    plan = _plans.put(key, _Plan(spec, launch, nbytes))
    fresh = _fresh_of.get(id(spec))
    # an op large enough to slice keeps the Python path, where slicing is decided
    if fresh is not None and launch is not None and nbytes <= slicing.SLICE_BYTES:
        _teach(fresh, key[-1], out, inputs, launch)
    return plan


# -- the native fast path of an elementwise op (see native/fresh_elementwise.hpp) ------
# id(spec) -> the FreshElementwise of the op the spec belongs to; each plan built for
# contiguous operands of one dtype and shape is taught to it, so later calls with such
# operands skip every Python frame below the core's dispatch.
_fresh_of: dict[int, Any] = {}


def _forget_fresh() -> None:
    for fresh in _fresh_of.values():
        fresh.clear()


_plans.on_clear.append(_forget_fresh)  # the fast paths hold copies of elementwise plans


def _new_fresh(arity: int) -> Any:
    """A native FreshElementwise, or None where the extension is not loaded."""
    return fresh_api.new(arity)


def _teach(fresh: Any, aligned: bool, out: GPUArray, inputs: list[Any], launch: Any) -> None:
    fresh_api.teach(fresh, out, inputs, launch, aligned)  # scalars, stand-ins: taught nothing


@functools.cache
def _items(fmt: str) -> list[tuple[str, int]]:
    """(code, byte offset) of each item of a native-mode struct format ("@QQ8qi" ...)."""
    codes = [c * int(n or 1) for n, c in re.findall(r"(\d*)([a-zA-Z?])", fmt)]
    flat = "".join(codes)
    return [
        (c, struct.calcsize("@" + flat[: j + 1]) - struct.calcsize("@" + c))
        for j, c in enumerate(flat)
    ]


def _vector_path(
    n: int, lay: list[int], arrays: list[GPUArray], ptrs: list[int], vec: int
) -> int | None:
    """The layout's ndim flag for the kernels' vector path, or None for the strided one.

    0: every array operand is one merged dimension of unit element stride; -2: two
    dimensions, each array's last of unit element stride and its row stride a multiple of
    16 bytes (0 for an operand broadcast along rows), rows a multiple of `vec` elements.
    Both need n < 2^31 and every array at a 16-byte aligned address."""
    ndim = lay[1]
    if ndim not in (1, 2) or n >= 1 << 31 or any(p % 16 for p in ptrs if p):
        return None
    base = 2 + MAX_DIMS
    sizes = iter(x.dtype.itemsize for x in arrays)
    for k, p in enumerate(ptrs):
        if not p:
            continue  # a scalar operand
        row = lay[base + k * MAX_DIMS : base + k * MAX_DIMS + ndim]
        if row[-1] != next(sizes) or (ndim == 2 and row[0] % 16):
            return None
    if ndim == 1:
        return 0
    return -2 if lay[3] % vec == 0 else None


def _spread(lay: list[int], present: list[bool]) -> list[int]:
    head, rows = lay[: 2 + MAX_DIMS], lay[2 + MAX_DIMS :]
    packed = [rows[k * MAX_DIMS : (k + 1) * MAX_DIMS] for k in range(MAX_OPERANDS)]
    out_rows, it = [], iter(packed)
    for is_array in present:
        out_rows.append(next(it) if is_array else [0] * MAX_DIMS)
    out_rows += [[0] * MAX_DIMS] * (MAX_OPERANDS - len(out_rows))
    return head + [v for row in out_rows for v in row]


# -- the kernels the provider registers ------------------------------------------------
def copy(src: GPUArray, out: GPUArray) -> None:
    if src._dtype.kind == "c" or out._dtype.kind == "c":
        from . import complex_planes

        complex_planes.copy(src, out)
        return
    if (
        src.dtype is out.dtype
        and src.is_contiguous
        and out.is_contiguous
        and src.shape == out.shape
        and out.nbytes
    ):
        index = out.device.index
        context(index).copy_async(out.buffer.ptr + out.offset, src.buffer.ptr + src.offset,
                                  out.nbytes, streams.current_handle(index))  # fmt: skip
        return
    if cast.cast_contiguous(src, out):  # float-to-float, contiguous: the coalesced kernel
        return
    run(source.copy_kernel(out.dtype), out, [src])


def fill(out: GPUArray, value: bool | int | float | complex) -> None:
    if out._dtype.kind == "c":
        from . import complex_planes

        complex_planes.fill(out, value)
        return
    run(source.copy_kernel(out.dtype), out, [value])


def _unary(op: str) -> Callable[..., None]:
    rule = UNARY[op][0]
    cases = set(source.unary_cases(op))
    # (input dtype name, output dtype name, approximate) -> kernel: one dict lookup per call
    specs: dict[tuple[str, str, str], source.KernelSpec] = {}
    fresh = _new_fresh(1)

    def kernel(x: GPUArray, out: GPUArray, approximate: str = "none") -> None:
        spec = specs.get((x._dtype.name, out._dtype.name, approximate))
        if spec is None:
            if x.dtype.is_complex:
                _complex_unary(op, x, out)
                return
            compute = x.dtype if rule in ("to_bool", "logical", "bitwise") else out.dtype
            if (compute, out.dtype) not in cases:
                raise TypeError(f"the cuda backend has no {op} kernel for {x.dtype.name}")
            spec = source.unary_kernel(op, compute, out.dtype, approximate)
            specs[(x.dtype.name, out.dtype.name, approximate)] = spec
            if fresh is not None and approximate == "none":  # fresh(x) takes no parameters
                _fresh_of[id(spec)] = fresh
        run1(spec, out, x)

    kernel.__name__ = f"cuda_{op}"
    kernel.fresh = fresh  # type: ignore[attr-defined]
    return kernel


def _binary(op: str) -> Callable[..., None]:
    cases = set(source.binary_cases(op))
    specs: dict[tuple[str, str], source.KernelSpec] = {}  # (compute, out) names -> kernel
    fresh = _new_fresh(2)

    def kernel(x1: Any, x2: Any, out: GPUArray, compute: dt.DataType) -> None:
        spec = specs.get((compute.name, out._dtype.name))
        if spec is None:
            if compute.is_complex:
                _complex_binary(op, x1, x2, out, compute)
                return
            if (compute, out.dtype) not in cases:
                raise TypeError(f"the cuda backend has no {op} kernel for {compute.name}")
            spec = specs[(compute.name, out.dtype.name)] = source.binary_kernel(
                op, compute, out.dtype
            )
            if fresh is not None:
                _fresh_of[id(spec)] = fresh
        if type(x1) is GPUArray and type(x2) is GPUArray:
            run2(spec, out, x1, x2)
        else:
            run(spec, out, [x1, x2])

    kernel.__name__ = f"cuda_{op}"
    kernel.fresh = fresh  # type: ignore[attr-defined]
    return kernel


def _complex_unary(op: str, x: GPUArray, out: GPUArray) -> None:
    from . import complex_math, complex_planes

    if op in complex_planes.UNARY_OPS:
        complex_planes.unary(op, x, out)
    else:
        complex_math.unary(op, x, out)


def _complex_binary(op: str, x1: Any, x2: Any, out: GPUArray, compute: dt.DataType) -> None:
    from . import complex_math, complex_planes

    if op in complex_planes.BINARY_OPS:
        complex_planes.binary(op, x1, x2, out, compute)
    else:
        complex_math.binary(op, x1, x2, out, compute)


def where(cond: GPUArray, x1: Any, x2: Any, out: GPUArray) -> None:
    if out._dtype.kind == "c":
        from . import complex_planes

        complex_planes.where(cond, x1, x2, out)
        return
    run(source.where_kernel(out.dtype), out, [cond, x1, x2])


def make_provider() -> KernelProvider:
    provider = KernelProvider(
        "cuda", device_type="cuda", priority=10,
        description="NVRTC-compiled CUDA C kernels (strided, broadcasting, half types in float32)",
        gates_launches=True,  # every launch passes the extension's native gate
        name_errors=False,  # the launch path is measured: no wrapper frame per kernel call
    )  # fmt: skip
    provider.add("copy", copy, dt.EVERY_DTYPE)
    provider.add("fill", fill, dt.EVERY_DTYPE)
    from . import complex_math, complex_planes

    elementwise_dtypes = [d for d in dt.ALL_DTYPES if not d.is_float8]
    with_complex = [*elementwise_dtypes, *dt.COMPLEX_DTYPES]
    for op in UNARY:
        served = op in complex_planes.UNARY_OPS or op in complex_math.UNARY_OPS
        provider.add(op, _unary(op), with_complex if served else elementwise_dtypes)
    for op in BINARY:
        served = op in complex_planes.BINARY_OPS or op in complex_math.BINARY_OPS
        provider.add(op, _binary(op), with_complex if served else elementwise_dtypes)
    provider.add("where", where, dt.EVERY_DTYPE)
    for op in ("real", "imag", "conj", "angle"):
        provider.add(op, getattr(complex_planes, op), dt.COMPLEX_DTYPES)
    from . import decode_ops, fft_kernels, linalg_nn, linalg_solver, matmul

    fft_kernels.register(provider)

    matmul.register(provider)
    linalg_nn.register(provider)
    linalg_solver.register(provider)
    decode_ops.register(provider)
    movement.register(provider)
    from . import creation, nn, reductions

    for family in (reductions, nn, creation):
        family.register(provider)
    return provider
