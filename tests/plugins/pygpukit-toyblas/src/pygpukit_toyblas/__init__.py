"""Test plugin: a `toyblas` kernel provider for CPU arrays that counts its calls.

Serves `add` and `multiply` for float32 and float64 only, so an int32 add falls through
to the next provider. Its priority is below the built-in `cpu` provider's: it runs only
when a setting or a `backend=` argument asks for it. `calls[op]` counts kernel calls.

It also adds an op of its own, ``muladd`` (x * y + z), with a NumPy reference so the
conformance suite tests it; ``TOYBLAS_BROKEN=1`` in the environment swaps in a wrong
kernel (it skips the last element) to show the suite failing.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit.backend import DataType, empty, kernel, register_op
from pygpukit.backends.cpu.views import operand, view
from pygpukit.testing import random_numpy

calls: Counter[str] = Counter()

provider = gp.KernelProvider(
    "toyblas", device_type="cpu", priority=-10, description="test provider (NumPy, counted)"
)


def _binary(op: str, ufunc: np.ufunc) -> Callable[..., None]:
    def kernel(x1: Any, x2: Any, out: gp.GPUArray, compute: gp.DataType) -> None:
        calls[op] += 1
        ufunc(operand(x1, compute), operand(x2, compute), out=view(out))

    return kernel


provider.add("add", _binary("add", np.add), dtypes=["float32", "float64"])
provider.add("multiply", _binary("multiply", np.multiply), dtypes=["float32", "float64"])


def muladd(
    x: gp.GPUArray, y: gp.GPUArray, z: gp.GPUArray, /, *, backend: str | None = None
) -> gp.GPUArray:
    """x * y + z (one shape, one dtype): the public function of the plugin's own op."""
    if not x.shape == y.shape == z.shape or not x.dtype == y.dtype == z.dtype:
        raise ValueError("muladd: x, y and z must have one shape and one dtype")
    fn = kernel("muladd", x, y, z, backend=backend)
    out = empty(x.shape, x.dtype, x.device)
    if out.size:
        fn(x, y, z, out)
    return out


def _muladd_kernel(x: gp.GPUArray, y: gp.GPUArray, z: gp.GPUArray, out: gp.GPUArray) -> None:
    calls["muladd"] += 1
    result = view(x) * view(y) + view(z)
    if os.environ.get("TOYBLAS_BROKEN") == "1":  # the deliberately wrong kernel
        view(out).reshape(-1)[:-1] = result.reshape(-1)[:-1]
        return
    view(out)[...] = result


def _muladd_inputs(rng: np.random.Generator, dtype: DataType) -> tuple[np.ndarray, ...]:
    shape = tuple(int(n) for n in rng.integers(1, 6, size=int(rng.integers(0, 3))))
    return tuple(random_numpy(rng, shape, dtype) for _ in range(3))


register_op(
    "muladd", "(x, y, z, out)", summary="x * y + z (toyblas test plugin)",
    reference=lambda x, y, z: x.astype(np.float64) * y + z,
    inputs=_muladd_inputs, dtypes=("float32", "float64"), function=muladd,
)  # fmt: skip
provider.add("muladd", _muladd_kernel, dtypes=["float32", "float64"])


@gp.hookimpl
def pygpukit_register_kernels(register: Callable[[gp.KernelProvider], None]) -> None:
    register(provider)


@gp.hookimpl
def pygpukit_diagnose(report: Callable[[str, bool, str], None]) -> None:
    report("toyblas kernels", True, "add, multiply, muladd for float32/float64 (test plugin)")
