"""`pygpukit.fft`: the Array API's fft extension (discrete Fourier transforms).

Every transform dispatches like any other op (kernels ``fft_c2c``, ``fft_r2c`` and
``fft_c2r``; see ``pygpukit._ops.fourier`` for their conventions), so a backend that
provides them runs ``gp.fft`` on its device.
"""

from ._ops.fourier import (
    fft,
    fftfreq,
    fftn,
    fftshift,
    hfft,
    ifft,
    ifftn,
    ifftshift,
    ihfft,
    irfft,
    irfftn,
    rfft,
    rfftfreq,
    rfftn,
)

__all__ = [
    "fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift", "ihfft",
    "irfft", "irfftn", "rfft", "rfftfreq", "rfftn",
]  # fmt: skip
