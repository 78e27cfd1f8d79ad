"""The `cuda` provider's creation kernels: arange, linspace, eye, tril, triu.

Conventions of ``pygpukit._ops.creation``: ``arange(out, start, step)`` writes
``start + i * step`` (int64 arithmetic when both are ints, float64 otherwise);
``linspace(out, start, stop, step, endpoint)`` ends exactly on stop; ``eye(out, k)``;
``tril``/``triu``: ``kernel(x, out, k)`` over the last two dimensions. Complex eye, tril
and triu run the real kernels on the two part planes (``complex_planes``): the linalg
factorizations need them around their cuSOLVER calls.
"""

from __future__ import annotations

from pygpukit import GPUArray, KernelProvider
from pygpukit.core import dtypes as dt

from . import launcher
from .device_facts import BLOCK, sm_count
from .device_facts import data_ptr as _ptr
from .kernels import creation_source as cs
from .reductions import MAX_DIMS, _merge, _pad


def _grid(index: int, n: int) -> tuple[int]:
    return (max(1, min(-(-n // BLOCK), sm_count(index) * 32)),)


def arange(out: GPUArray, start: int | float, step: int | float) -> None:
    n = out.shape[0]
    is_int = isinstance(start, int) and isinstance(step, int)
    if is_int and not (-(1 << 63) <= start < 1 << 63 and -(1 << 63) <= step < 1 << 63):
        raise OverflowError(f"arange: start {start} or step {step} does not fit in int64")
    index = out.device.index
    fn = launcher.function(index, f"pgk_arange_{out.dtype.name}", cs.fill_source(out.dtype),
                           cs.ARANGE_FORMAT)  # fmt: skip
    istart, istep = (int(start), int(step)) if is_int else (0, 0)
    fn.launch(_grid(index, n), (BLOCK,), (_ptr(out), n, out.strides[0], istart, istep,
                                          float(start), float(step), int(not is_int)))  # fmt: skip


def linspace(out: GPUArray, start: int | float, stop: int | float, step: float,
             endpoint: bool) -> None:  # fmt: skip
    n = out.shape[0]
    index = out.device.index
    fn = launcher.function(index, f"pgk_linspace_{out.dtype.name}", cs.fill_source(out.dtype),
                           cs.LINSPACE_FORMAT)  # fmt: skip
    args = (_ptr(out), n, out.strides[0], float(start), float(stop), float(step), int(endpoint))
    fn.launch(_grid(index, n), (BLOCK,), args)


def eye(out: GPUArray, k: int) -> None:
    if out.dtype.is_complex:  # ones on the real plane's diagonal, the imaginary plane zero
        from . import complex_planes, provider

        eye(complex_planes.plane(out, False), k)
        provider.fill(complex_planes.plane(out, True), 0.0)
        return
    rows, cols = out.shape
    index = out.device.index
    fn = launcher.function(index, f"pgk_eye_{out.dtype.name}", cs.fill_source(out.dtype),
                           cs.EYE_FORMAT)  # fmt: skip
    fn.launch(_grid(index, rows * cols), (BLOCK,),
              (_ptr(out), rows, cols, out.strides[0], out.strides[1], int(k)))  # fmt: skip


def _triangle(x: GPUArray, out: GPUArray, k: int, upper: bool) -> None:
    if x.dtype is not out.dtype or x.shape != out.shape:
        raise TypeError(f"{'triu' if upper else 'tril'}: out must match x's shape and dtype")
    if x.dtype.is_complex:  # each part plane on its own (complex128 has no 16-byte kernel)
        from .complex_planes import plane

        for imag in (False, True):
            _triangle(plane(x, imag), plane(out, imag), k, upper)
        return
    batch = _merge([(x.shape[d], x.strides[d], out.strides[d]) for d in range(x.ndim - 2)
                    if x.shape[d] != 1])  # fmt: skip
    dims = [*batch, *((x.shape[d], x.strides[d], out.strides[d]) for d in (-2, -1))]
    if len(dims) > MAX_DIMS:
        raise NotImplementedError(f"tril/triu: too many non-mergeable dimensions in {x.shape}")
    n = out.size
    if n == 0:
        return
    lay = [n, len(dims), *_pad([d[0] for d in dims]), *_pad([d[1] for d in dims]),
           *_pad([d[2] for d in dims])]  # fmt: skip
    size = x.dtype.itemsize
    index = out.device.index
    fn = launcher.function(index, f"pgk_tri_{size}", cs.tri_source(size), cs.TRI_FORMAT)
    fn.launch(_grid(index, n), (BLOCK,), (_ptr(out), _ptr(x), *lay, int(k), int(upper)))


def tril(x: GPUArray, out: GPUArray, k: int) -> None:
    _triangle(x, out, k, False)


def triu(x: GPUArray, out: GPUArray, k: int) -> None:
    _triangle(x, out, k, True)


def register(provider: KernelProvider) -> None:
    """Add arange, linspace, eye, tril and triu to `provider`."""
    provider.add("arange", arange)
    from . import complex_planes

    provider.add("linspace", complex_planes.linspace(linspace),
                 (*dt.ALL_DTYPES, *dt.COMPLEX_DTYPES))  # fmt: skip
    for name, fn in (("eye", eye), ("tril", tril), ("triu", triu)):
        provider.add(name, fn, dt.EVERY_DTYPE)
