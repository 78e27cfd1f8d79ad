"""cuFFT for gp.fft on cuda arrays: the library found at run time and the one FFT plan cache.

The library is located by ``PYGPUKIT_CUFFT_PATH`` (a file or folder) when set, else by
NVIDIA's ``cuda-pathfinder`` (the ``nvidia-cufft`` wheel, ``pip install
pygpukit-cuda[cufft]``, then the system's CUDA), and opened by the extension
(``_native.Cufft``: dlopen, no CUDA headers at build time). ``status()`` says in one line
what was found or why not; ``missing()`` is that line when cuFFT cannot be used, which the
FFT kernels give as their refusal, so ``gp.explain`` and the dispatch error say what to
install.

A transform is a native ``FftPlan`` (cufftMakePlanMany64 with auto-allocation off), made by
`plan` and cached in ``plans.CUFFT``, keyed by device, cufftType and the whole layout
(sizes, embeddings, strides, distances, batch). The stream is not part of the key: `execute`
sets the current stream and a work area on every call, so one plan serves every stream. The
work area is a block of the stream's pool (a graph's private pool while capturing), taken
for that one call and returned to the stream's cache after, as cuBLASLt's workspace is.
Creating a plan allocates device memory inside cuFFT (its twiddle tables), so the first call
of a new shape must happen before a CUDA graph capture; replaying afterwards needs nothing
new.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from . import _loader, device, plans, runtime_libs, streams

# cufftType values of cufft.h: (complex-to-complex, real-to-complex, complex-to-real)
C2C, R2C, C2R = 0x29, 0x2A, 0x2C
Z2Z, D2Z, Z2D = 0x69, 0x6A, 0x6C
FORWARD, INVERSE = -1, 1

INSTALL_HINT = "pip install 'pygpukit-cuda[cufft]' (the nvidia-cufft wheel)"


def candidates() -> list[str]:
    """Paths to open, in order: ``PYGPUKIT_CUFFT_PATH``, then what cuda-pathfinder finds."""
    return runtime_libs.candidates("PYGPUKIT_CUFFT_PATH", "libcufft.so*", _pathfinder_path())


def _pathfinder_path() -> str | None:
    """Where cuda-pathfinder finds libcufft, or None."""
    return runtime_libs.pathfinder_path("cufft")


_lock = threading.Lock()
_tried = False
_lib: Any = None
_status = "cuFFT not looked for yet"


def library() -> Any:
    """The opened ``_native.Cufft``, or None when it is not installed (see `status`)."""
    global _tried, _lib, _status
    if not _tried:
        with _lock:
            if not _tried:
                if os.environ.get("PYGPUKIT_CUFFT", "1") == "0":
                    _status = "cuFFT disabled by PYGPUKIT_CUFFT=0"
                else:
                    _lib, _status = _open(candidates())
                _tried = True
    return _lib


def status() -> str:
    """One line: the cuFFT version and path in use, or why there is none."""
    library()
    return _status


def missing() -> str | None:
    """Why gp.fft cannot run on cuda arrays (what to install), or None when it can."""
    return None if library() is not None else _status


def _open(paths: list[str]) -> tuple[Any, str]:
    try:
        native = _loader.native()
    except Exception as exc:  # the extension itself is missing: say so
        return None, f"cuFFT unusable: the native extension did not load ({exc})"

    def describe(lib: Any) -> str:
        v = int(lib.version)
        return f"cuFFT {v // 1000}.{(v // 100) % 10}.{v % 100} from {lib.path}"

    lib, said = runtime_libs.open_first(paths, native.Cufft, describe)
    if lib is not None:
        return lib, said[0]
    return None, (
        f"cuFFT not found, so gp.fft cannot run on cuda arrays: {INSTALL_HINT}, or set "
        f"PYGPUKIT_CUFFT_PATH. Tried: {runtime_libs.tried(said)}"
    )


#: layout key -> FftPlan (plans.CUFFT, with the backend's other plan caches)
_plans = plans.CUFFT


def plan(device_index: int, fft_type: int, n: tuple[int, ...], inembed: tuple[int, ...],
         istride: int, idist: int, onembed: tuple[int, ...], ostride: int, odist: int,
         batch: int) -> Any:  # fmt: skip
    """The cached FftPlan of this transform (sizes and strides in elements, rank 1 to 3)."""
    key = (device_index, fft_type, n, inembed, istride, idist, onembed, ostride, odist, batch)
    found = _plans.get(key)
    if found is not None:
        return found
    lib = library()
    if lib is None:
        raise RuntimeError(_status)
    if streams.current_stream(device_index).capture_pool is not None:
        # cufftMakePlan allocates and uploads its tables: not allowed inside a capture
        raise RuntimeError(
            f"gp.fft: a new FFT plan (sizes {n}, batch {batch}) cannot be made while a CUDA "
            "graph is being captured; run the same transform once before capturing"
        )
    from .device import context

    made = lib.plan(context(device_index), fft_type, list(n), list(inembed), istride, idist,
                    list(onembed), ostride, odist, batch)  # fmt: skip
    with _lock:
        _plans.put(key, made)
    return made


def stream_pool(device_index: int) -> tuple[int, Any]:
    """The current stream's handle and the pool its scratch blocks come from (a graph's
    private pool while capturing)."""
    s = streams._current.get()
    if s is None:
        return 0, device.allocator(device_index)
    if s.device_index != device_index:
        streams.current(device_index)  # raises, naming both devices
    return s.ptr, s.capture_pool or device.allocator(device_index)


def execute(fft_plan: Any, device_index: int, in_ptr: int, out_ptr: int, direction: int) -> None:
    """Enqueue `fft_plan` on the current stream with a work area from that stream's pool."""
    handle, pool = stream_pool(device_index)
    nbytes = int(fft_plan.work_bytes)
    if nbytes:
        work = pool.allocate(nbytes, handle)  # back to the stream's cache after this call
        fft_plan(handle, in_ptr, out_ptr, work.ptr, direction)
    else:
        fft_plan(handle, in_ptr, out_ptr, 0, direction)
