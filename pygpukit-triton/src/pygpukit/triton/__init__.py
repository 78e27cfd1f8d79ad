"""`pygpukit.triton`: Triton kernels on GPUArrays (the `triton` kernel provider and the seeds' API).

    from pygpukit.triton import from_gpuarray, kernels, triton_available

    if triton_available():
        kernels.rmsnorm(from_gpuarray(x), from_gpuarray(w), from_gpuarray(out), eps=1e-5)

The provider ``triton`` serves cuda arrays (the cpu device under ``TRITON_INTERPRET=1``);
choose it per op with ``PYGPUKIT_DISPATCH=softmax:triton``, ``gp.config.use(dispatch=...)``
or ``backend="triton"``. ``gp.explain`` says why it was or was not chosen.
"""

from __future__ import annotations

from . import kernels
from .array import TritonArray, from_gpuarray
from .availability import interpret, status, triton_available
from .ops import swiglu

__all__ = [
    "TritonArray", "from_gpuarray", "interpret", "kernels", "status", "swiglu", "triton_available",
]  # fmt: skip
