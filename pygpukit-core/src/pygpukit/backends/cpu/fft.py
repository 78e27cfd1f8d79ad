"""CPU kernels of the FFT family: NumPy's pocketfft, in the input's own precision."""

from __future__ import annotations

import numpy as np

from ..._array import GPUArray
from ..._dtypes import COMPLEX_DTYPES, float32, float64
from ..._providers import KernelProvider
from .views import view


def _store(out: GPUArray, result: np.ndarray, scale: float) -> None:
    target = view(out)
    # NumPy >= 2 transforms complex64 and float32 in single precision; scale in place
    target[...] = result
    if scale != 1.0:
        target *= target.real.dtype.type(scale)


def fft_c2c(x: GPUArray, out: GPUArray, axes: tuple[int, ...], forward: bool,
            scale: float) -> None:  # fmt: skip
    a = view(x)
    # norm="forward" on the inverse leaves it unscaled: the core's scale is the only one
    result = np.fft.fftn(a, axes=axes) if forward else np.fft.ifftn(a, axes=axes, norm="forward")
    _store(out, result, scale)


def fft_r2c(x: GPUArray, out: GPUArray, axes: tuple[int, ...], scale: float) -> None:
    _store(out, np.fft.rfftn(view(x), axes=axes), scale)


def fft_c2r(x: GPUArray, out: GPUArray, axes: tuple[int, ...], scale: float) -> None:
    lengths = [out.shape[a] for a in axes]
    _store(out, np.fft.irfftn(view(x), s=lengths, axes=axes, norm="forward"), scale)


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
    provider.add("fft_c2c", fft_c2c, COMPLEX_DTYPES)
    provider.add("fft_r2c", fft_r2c, (float32, float64))
    provider.add("fft_c2r", fft_c2r, COMPLEX_DTYPES)
