"""The cuda provider's FFT kernels (fft_c2c, fft_r2c, fft_c2r) on cuFFT, for any axes and views.

One exception first: an r2c of 1024-point rows (over the last axis of a contiguous float32
array) runs our own kernel, a warp per row: as fast as cuFFT's with its input cold in DRAM,
faster with it in L2 (`rfft_kernel`; ``PYGPUKIT_FFT_KERNELS=0`` sends it to cuFFT too).

Each kernel follows the conventions of ``pygpukit._ops.fourier`` (unnormalised transform
over ``axes``, times ``scale``). A transform over up to three axes is one cuFFT call when
both operands fit cuFFT's advanced layout (the other axes merge into one batch dimension
with one distance; each transformed axis' stride a whole multiple of the next one's): the
common cases (last axis or trailing axes of contiguous arrays, axis 0 of a matrix) read
the caller's view and write the output directly; packed operands are planned with cuFFT's
basic layout (NULL embeddings), as torch and CuPy plan them. Anything else goes through a
contiguous copy with the transformed axes last. More than three axes take several passes (the
transform is separable): complex passes run in place on the output.

cuFFT's complex-to-real transform overwrites its input, so ``fft_c2r`` always reads a
private copy, never the caller's array (for a contiguous input, one cuMemcpyAsync into a
pool block, or, when the norm scales, one kernel that copies and scales: the transform is
linear, so no scaling pass over the output follows).

A repeated call takes a fast path (`_fast`): the whole decision for one operand layout —
single pass or not, which plan, whether the input is copied — is made once and kept in
``plans.FFT_FAST``; a later call with the same shapes, strides, dtypes, axes and direction
only checks alignment, makes the private copy where c2r needs one, executes and scales.
The op layer's repeat of a whole call goes further: each kernel's ``fresh_for`` (`fft_fresh`)
turns that decision into one native FftCall.
"""

from __future__ import annotations

from typing import Any

from pygpukit import GPUArray, Kernel, KernelProvider
from pygpukit.core import dtypes as dt

from . import cufft, device, launcher, plans, rfft_kernel, streams
from .device_facts import BLOCK, sm_count
from .dims import merge_dims

_C2C_TYPES = {"complex64": cufft.C2C, "complex128": cufft.Z2Z}
_R2C_TYPES = {"float32": cufft.R2C, "float64": cufft.D2Z}
_C2R_TYPES = {"complex64": cufft.C2R, "complex128": cufft.Z2D}
#: most axes one cuFFT plan transforms
MAX_RANK = 3


def _ptr(x: GPUArray) -> int:
    return int(x._buffer.ptr + x._offset)


def _embed(strides: list[int], sizes: list[int]) -> tuple[tuple[int, ...], int] | None:
    """(embedding, innermost stride) placing element (i0, i1, ...) at
    stride * ((i0 * e1 + i1) * e2 + ...), or None when the strides allow no such layout."""
    st = list(strides)
    r = len(sizes)
    if sizes[-1] == 1:
        st[-1] = 1  # a length-1 axis is never stepped along: any stride serves
    for k in range(r - 2, -1, -1):
        if sizes[k] == 1:
            st[k] = st[k + 1] * sizes[k + 1]
    if st[-1] <= 0:
        return None
    embed = [sizes[0]]
    for k in range(1, r):
        if st[k - 1] <= 0 or st[k - 1] % st[k] or st[k - 1] // st[k] < sizes[k]:
            return None
        embed.append(st[k - 1] // st[k])
    return tuple(embed), st[-1]


def _aligned(x: GPUArray) -> bool:
    """Whether cuFFT takes x's address: it refuses (CUFFT_INVALID_VALUE) a pointer not
    aligned to the complex element size, which a real view at an odd offset has (a float32
    array starting 3 elements into a buffer: 12 bytes, not a multiple of 8)."""
    complex_size = x.dtype.itemsize if x.dtype.is_complex else 2 * x.dtype.itemsize
    return _ptr(x) % complex_size == 0


def _elements(x: GPUArray) -> list[int] | None:
    size = x.dtype.itemsize
    if any(s % size for s in x.strides):
        return None
    return [s // size for s in x.strides]


def _layout(src: GPUArray, dst: GPUArray, axes: tuple[int, ...], logical: tuple[int, ...]
            ) -> tuple[Any, ...] | None:  # fmt: skip
    """cufftMakePlanMany64's layout arguments for src -> dst over `axes`, or None."""
    ist, ost = _elements(src), _elements(dst)
    if ist is None or ost is None:
        return None
    others = [a for a in range(src.ndim) if a not in axes]
    bshape = tuple(src.shape[a] for a in others)
    merged = merge_dims(bshape, [tuple(ist[a] for a in others), tuple(ost[a] for a in others)])
    if len(merged) != 1:
        return None
    batch, (idist, odist) = merged[0]
    fit_in = _embed([ist[a] for a in axes], [src.shape[a] for a in axes])
    fit_out = _embed([ost[a] for a in axes], [dst.shape[a] for a in axes])
    if fit_in is None or fit_out is None:
        return None
    (inembed, istride), (onembed, ostride) = fit_in, fit_out
    if batch == 1:  # one transform: the distance is never used, any positive value serves
        idist = istride * _prod(inembed)
        odist = ostride * _prod(onembed)
    elif idist <= 0 or odist <= 0:
        return None
    in_sizes = tuple(src.shape[a] for a in axes)
    out_sizes = tuple(dst.shape[a] for a in axes)
    if _packed(inembed, in_sizes, istride, idist, batch) and _packed(
        onembed, out_sizes, ostride, odist, batch
    ):
        # both operands packed (a contiguous array over trailing axes): cuFFT's basic
        # layout, NULL embeddings, as torch and CuPy plan it; cuFFT may pick other (faster)
        # kernels for it than for the same layout spelt out as an advanced one
        return (logical, (), 1, _prod(inembed), (), 1, _prod(onembed), batch)
    return (logical, inembed, istride, idist, onembed, ostride, odist, batch)


def _packed(embed: tuple[int, ...], sizes: tuple[int, ...], stride: int, dist: int,
            batch: int) -> bool:  # fmt: skip
    """Whether an operand is dense: its own sizes as the embedding, unit stride, and one
    transform right after another."""
    return stride == 1 and embed == sizes and (batch == 1 or dist == _prod(sizes))


def _prod(xs: tuple[int, ...]) -> int:
    out = 1
    for v in xs:
        out *= v
    return out


def _permuted(x: GPUArray, perm: list[int]) -> GPUArray:
    """A view of x with its axes in `perm`'s order (no copy)."""
    return x._view(tuple(x.shape[a] for a in perm), tuple(x.strides[a] for a in perm), x._offset)


def _contiguous(x: GPUArray) -> GPUArray:
    """A new contiguous copy of x (bit-exact, any dtype)."""
    from . import complex_planes

    out = GPUArray.empty(x.shape, x.dtype, x.device)
    if x.is_contiguous and x._device.type == "cuda" and out.nbytes:
        # the common case is one cuMemcpyAsync, without the copy kernel's dispatch
        index = x._device.index
        stream = streams.current_handle(index)
        device.context(index).copy_async(_ptr(out), _ptr(x), out.nbytes, stream)
        return out
    complex_planes.raw_copy(x, out)
    return out


def _pass(kind: str, src: GPUArray, dst: GPUArray, axes: tuple[int, ...], direction: int,
          src_private: bool) -> None:  # fmt: skip
    """dst = the unscaled transform of src over `axes` (at most three): kind c2c, r2c, c2r.

    A transform of length 1 is the identity, so such axes are dropped before cuFFT sees
    them (it is never asked for a size-1 dimension); with none left, a copy (r2c: to
    complex, c2r: the real parts) does the whole pass."""
    from . import complex_planes

    sizes = dst.shape if kind == "c2r" else src.shape
    last = axes[-1]
    kept = tuple(a for a in axes[:-1] if sizes[a] > 1)
    if sizes[last] > 1:
        kept += (last,)
    elif kind != "c2c":  # the real <-> complex step along a length-1 last axis: a cast
        if kind == "r2c":
            complex_planes.copy(src, dst)
            if kept:
                _pass("c2c", dst, dst, kept, direction, True)
        else:
            if kept:
                src = _contiguous(src) if not src_private else src
                _pass("c2c", src, src, kept, cufft.INVERSE, True)
            complex_planes.real(src, dst)
        return
    if not kept:  # c2c over length-1 axes only
        if src is not dst:
            complex_planes.raw_copy(src, dst)
        return
    _cufft_pass(kind, src, dst, kept, direction, src_private)


def _cufft_pass(kind: str, src: GPUArray, dst: GPUArray, axes: tuple[int, ...],
                direction: int, src_private: bool) -> None:  # fmt: skip
    """`_pass` over axes of length 2 and more: one cuFFT execution (copies where needed)."""
    key = (kind, src._shape, src._strides, src._dtype.name, dst._shape, dst._strides, axes,
           src_private, dst._device.index)  # fmt: skip
    # the layout cache knows shapes and strides, not addresses: alignment is asked each call
    aligned = _aligned(src) and _aligned(dst)
    direct = _direct.get(key) if aligned else None
    if direct is not None:  # the operands fit as they are: straight to the plan
        plan = cufft.plan(dst._device.index, *direct)
        cufft.execute(plan, dst._device.index, _ptr(src), _ptr(dst), direction)
        return
    if kind == "c2r":
        logical = tuple(dst.shape[a] for a in axes)
        fft_type = _C2R_TYPES[src.dtype.name]
    else:
        logical = tuple(src.shape[a] for a in axes)
        fft_type = (_C2C_TYPES if kind == "c2c" else _R2C_TYPES)[src.dtype.name]
    index = dst.device.index
    # c2r overwrites its input: it may read only an array of our own
    usable = aligned and (src_private or kind != "c2r")
    lay = _layout(src, dst, axes, logical) if usable else None
    target = None
    if lay is not None:
        _direct.put(key, (fft_type, *lay))
    else:
        perm = [a for a in range(src.ndim) if a not in axes] + list(axes)
        moved = tuple(range(src.ndim - len(axes), src.ndim))
        src = _contiguous(_permuted(src, perm))
        view = _permuted(dst, perm)
        lay = _layout(src, view, moved, logical) if _aligned(view) else None
        if lay is None:  # the output's layout or address does not fit: write a scratch array
            target, view = view, GPUArray.empty(view.shape, dst.dtype, dst.device)
            lay = _layout(src, view, moved, logical)
            assert lay is not None, "a contiguous array with trailing axes always fits"
        dst = view
    plan = cufft.plan(index, fft_type, *lay)
    cufft.execute(plan, index, _ptr(src), _ptr(dst), direction)
    if target is not None:
        from . import complex_planes

        complex_planes.raw_copy(dst, target)


#: (kind, operand layouts, axes, ...) -> cufft.plan's arguments, for operands that need no
#: copy: a repeated transform skips the layout search (the plans are plans.CUFFT's)
_direct = plans.FFT_LAYOUT


def _groups(axes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """axes in chunks of at most MAX_RANK, the chunk holding the last axis first."""
    return [axes[max(0, i - MAX_RANK) : i] for i in range(len(axes), 0, -MAX_RANK)]


_SCALE_SOURCE = r"""
extern "C" __global__ void pgk_fft_scale_f32(float* p, long long n, float s) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) p[i] *= s;
}
extern "C" __global__ void pgk_fft_scale_f64(double* p, long long n, double s) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) p[i] *= s;
}
extern "C" __global__ void pgk_fft_scaled_copy_f32(float* d, const float* p, long long n,
                                                   float s) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) d[i] = p[i] * s;
}
extern "C" __global__ void pgk_fft_scaled_copy_f64(double* d, const double* p, long long n,
                                                   double s) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) d[i] = p[i] * s;
}
"""


#: (device, double precision, element count, copying) -> (kernel, grid): a repeated
#: scaling looks nothing else up (loaded functions live as long as the process)
_scale_launches: dict[tuple[int, bool, int, bool], tuple[Any, int]] = {}


def _scale_launch(d: dt.DataType, size: int, index: int, copying: bool) -> tuple[Any, int, int]:
    """(kernel, grid, real element count) scaling `size` elements of dtype d, in place or
    (copying) into another buffer."""
    double = d in (dt.float64, dt.complex128)
    n = size * (2 if d.is_complex else 1)
    key = (index, double, n, copying)
    found = _scale_launches.get(key)
    if found is None:
        name = ("pgk_fft_scaled_copy_" if copying else "pgk_fft_scale_") + (
            "f64" if double else "f32")  # fmt: skip
        fmt = ("@QQqd" if double else "@QQqf") if copying else ("@Qqd" if double else "@Qqf")
        fn = launcher.function(index, name, _SCALE_SOURCE, fmt)
        grid = max(1, min(-(-n // BLOCK), sm_count(index) * 32))
        if len(_scale_launches) >= 1024:
            _scale_launches.clear()  # endlessly new sizes: start over rather than grow
        found = _scale_launches[key] = (fn, grid)
    return (*found, n)


def _scale(out: GPUArray, scale: float) -> None:
    """out *= scale, in place (out is the kernels' new contiguous output)."""
    if scale == 1.0:
        return
    fn, grid, n = _scale_launch(out._dtype, out.size, out._device.index, False)
    fn.launch((grid,), (BLOCK,), (_ptr(out), n, scale))


# -- the fast path: one decision per operand layout -------------------------------------------
#: (kind, both operands' shapes, strides and dtypes, axes, direction, device) -> (cufft.plan's
#: arguments, whether the input is copied first), or None where the call needs the general
#: path (several passes, length-1 axes, a layout cuFFT cannot address directly)
_fast_plans = plans.FFT_FAST
_MISS = object()
#: how the fast path feeds cuFFT: the input itself, a raw pool block filled by one
#: cuMemcpyAsync (c2r of a contiguous cuda array), or a contiguous copy array (c2r otherwise)
_NO_COPY, _MEMCPY, _COPY = 0, 1, 2


def _fast_entry(kind: str, x: GPUArray, out: GPUArray, axes: tuple[int, ...]
                ) -> tuple[tuple[Any, ...], int] | None:  # fmt: skip
    """The fast path's decision for this layout (see `_fast_plans`)."""
    sizes = out.shape if kind == "c2r" else x.shape
    if len(axes) > MAX_RANK or any(sizes[a] < 2 for a in axes):
        return None
    logical = tuple(sizes[a] for a in axes)
    if kind == "c2r":
        # c2r overwrites its input: it reads a contiguous private copy, whose strides are
        # known now although its address is not
        strides: list[int] = []
        step = x.dtype.itemsize
        for n in reversed(x.shape):
            strides.insert(0, step)
            step *= n
        src = x._view(x.shape, tuple(strides), 0)
        fft_type = _C2R_TYPES[x.dtype.name]
    else:
        src = x
        fft_type = (_C2C_TYPES if kind == "c2c" else _R2C_TYPES)[x.dtype.name]
    lay = _layout(src, out, axes, logical)
    if lay is None:
        return None
    if kind != "c2r":
        return (fft_type, *lay), _NO_COPY
    # a contiguous cuda input is copied with one cuMemcpyAsync into a pool block
    memcpy = x.is_contiguous and x._device.type == "cuda"
    return (fft_type, *lay), _MEMCPY if memcpy else _COPY


def _fast(kind: str, x: GPUArray, out: GPUArray, axes: tuple[int, ...], direction: int,
          scale: float) -> bool:  # fmt: skip
    """Run the whole transform (scale included) as one planned cuFFT call when this layout
    allows it; False (nothing done) when the general path must run."""
    key = (kind, x._shape, x._strides, x._dtype.name, out._shape, out._strides, out._dtype.name,
           axes, direction, out._device)  # fmt: skip
    entry = _fast_plans.get(key, _MISS)
    if entry is _MISS:
        entry = _fast_plans.put(key, _fast_entry(kind, x, out, axes))
    if entry is None:
        return False
    args, copy = entry
    # the cache knows layouts, not addresses: alignment is asked each call (a private copy
    # is a fresh allocation, always aligned)
    if not _aligned(out) or not (copy or _aligned(x)):
        return False
    index = out._device.index
    plan = cufft.plan(index, *args)
    if copy == _MEMCPY:
        # the private copy needs no array object: a pool block on this stream, returned to
        # the stream's cache (stream-ordered) once this call has enqueued its work
        handle, pool = cufft.stream_pool(index)
        nbytes = x.nbytes
        block = pool.allocate(nbytes, handle)
        if scale == 1.0:
            device.context(index).copy_async(block.ptr, _ptr(x), nbytes, handle)
        else:
            # the transform is linear: scaling its input in the copy it needs anyway saves
            # _scale's read-and-write pass over the output (as many bytes as the input)
            fn, grid, n = _scale_launch(x._dtype, x.size, index, True)
            fn.launch((grid,), (BLOCK,), (block.ptr, _ptr(x), n, scale), 0, handle)
        cufft.execute(plan, index, block.ptr, _ptr(out), direction)
        del block
        return True
    else:
        src = _contiguous(x) if copy == _COPY else x
        cufft.execute(plan, index, _ptr(src), _ptr(out), direction)
    _scale(out, scale)
    return True


# -- the kernels ---------------------------------------------------------------------------
def fft_c2c(x: GPUArray, out: GPUArray, axes: tuple[int, ...], forward: bool,
            scale: float) -> None:  # fmt: skip
    direction = cufft.FORWARD if forward else cufft.INVERSE
    if _fast("c2c", x, out, tuple(axes), direction, scale):
        return
    src, private = x, False
    for group in _groups(tuple(axes)):
        _pass("c2c", src, out, group, direction, private)
        src, private = out, True  # later passes run in place on the output
    _scale(out, scale)


def fft_r2c(x: GPUArray, out: GPUArray, axes: tuple[int, ...], scale: float) -> None:
    if rfft_kernel.serves(x, out, tuple(axes)):
        rfft_kernel.run(x, out, scale)  # our own kernel for 1024-point rows (rfft_kernel.py)
        return
    if _fast("r2c", x, out, tuple(axes), cufft.FORWARD, scale):
        return
    groups = _groups(tuple(axes))
    _pass("r2c", x, out, groups[0], cufft.FORWARD, False)
    for group in groups[1:]:
        _pass("c2c", out, out, group, cufft.FORWARD, True)
    _scale(out, scale)


def fft_c2r(x: GPUArray, out: GPUArray, axes: tuple[int, ...], scale: float) -> None:
    if _fast("c2r", x, out, tuple(axes), 0, scale):
        return
    groups = _groups(tuple(axes))
    src, private = x, False
    if len(groups) > 1:  # the complex axes first, on a copy, then the real transform
        src, private = _contiguous(x), True
        for group in groups[1:]:
            _pass("c2c", src, src, group, cufft.INVERSE, True)
    _pass("c2r", src, out, groups[0], 0, private)
    _scale(out, scale)


class _CufftKernel(Kernel):
    """A Kernel that refuses, naming what to install, while cuFFT cannot be loaded."""

    def refusal(self, dtypes: tuple[dt.DataType, ...]) -> str | None:
        why = cufft.missing()
        return why if why is not None else super().refusal(dtypes)


def register(provider: KernelProvider) -> None:
    """Add the three FFT kernels, each with its ``fresh_for`` (`fft_fresh`); dispatch asks
    cuFFT's presence when they are first chosen."""
    from . import fft_fresh

    for op, fn, fresh, dtypes in (
        ("fft_c2c", fft_c2c, fft_fresh.fresh_c2c, dt.COMPLEX_DTYPES),
        ("fft_r2c", fft_r2c, fft_fresh.fresh_r2c, (dt.float32, dt.float64)),
        ("fft_c2r", fft_c2r, fft_fresh.fresh_c2r, dt.COMPLEX_DTYPES),
    ):
        setattr(fn, "fresh_for", fresh)  # noqa: B010 (the op layer's repeat path)
        provider.add(op, fn, dtypes)
        k = provider.kernels[op]
        provider.kernels[op] = _CufftKernel(k.op, k.fn, k.provider, k.dtypes, k.gated)
