"""Test plugin: a `toyblas` kernel provider for CPU arrays that counts its calls.

Serves `add` and `multiply` for float32 and float64 only, so an int32 add falls through
to the next provider. Its priority is below the built-in `cpu` provider's: it runs only
when a setting or a `backend=` argument asks for it. `calls[op]` counts kernel calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit.backends.cpu.views import operand, view

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


@gp.hookimpl
def pygpukit_register_kernels(register: Callable[[gp.KernelProvider], None]) -> None:
    register(provider)


@gp.hookimpl
def pygpukit_diagnose(report: Callable[[str, bool, str], None]) -> None:
    report("toyblas kernels", True, "add, multiply for float32/float64 (test plugin)")
