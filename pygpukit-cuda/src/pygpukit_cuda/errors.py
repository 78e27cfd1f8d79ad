"""Exceptions of the CUDA backend that Python code catches by type.

Defined here in pure Python (the native extension raises them through a translator), so
they can be imported and caught without a GPU, a driver or the extension.
"""

from __future__ import annotations


class CudaContextLostError(RuntimeError):
    """A kernel faulted (illegal address, trap, misaligned access, ...) and the CUDA context
    is unusable for the rest of the process: every later GPU call raises this again.

    Restart the process; a new process gets a fresh context and works normally.
    """


__all__ = ["CudaContextLostError"]
