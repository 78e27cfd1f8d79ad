"""Conformance specs of matmul: batch broadcasting, 1-D operands, K=0, views, accuracy.

Floating results are judged by their relative Frobenius error against a float64
product: float64 < 1e-12, float32 < 1e-5 (K <= 256), half types < 1e-2; with
``allow_tf32=True`` float32 may use TF32 and gets 5e-3. Integer products are exact
modulo the dtype's wrap-around, as the kernel convention says.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import pygpukit as gp

from .... import _dtypes as dt
from ...._array import GPUArray
from ...._device import Device
from ...._dtypes import DataType
from ..catalog import Case, Layout, OpSpec
from ._common import draw, f64, relative_frobenius, upload

MATMUL_DTYPES = (
    *(d for d in dt.NUMERIC_DTYPES if not d.is_float8 and d.kind != "b"),
    *dt.COMPLEX_DTYPES,
)
#: the largest relative Frobenius error of a float result, per dtype
FROBENIUS = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2, "bfloat16": 1e-2,
             "complex64": 1e-5, "complex128": 1e-12}  # fmt: skip
TF32_FROBENIUS = 5e-3

SHAPES = (
    # label, layout of x1, layout of x2
    ("2-d", Layout("c", (3, 4)), Layout("c", (4, 5))),
    ("batch broadcast", Layout("c", (2, 1, 3, 4)), Layout("c", (3, 4, 2))),
    ("broadcast batch view", Layout("b", (1, 3, 4), broadcast=(2, 3, 4)), Layout("c", (4, 2))),
    ("transposed operands", Layout("t", (4, 3), transpose=True),
     Layout("t", (2, 5, 4), transpose=True)),
    ("reversed rows", Layout("r", (5, 3), key=(slice(None, None, -1),)), Layout("c", (3, 2))),
    ("1-d @ 2-d", Layout("c", (4,)), Layout("c", (4, 3))),
    ("2-d @ 1-d", Layout("c", (2, 3, 4)), Layout("c", (4,))),
    ("1-d @ 1-d", Layout("c", (6,)), Layout("c", (6,))),
    ("K=0", Layout("c", (2, 3, 0)), Layout("c", (0, 4))),
    ("size-1", Layout("c", (1, 1)), Layout("c", (1, 1))),
    ("K=256", Layout("c", (8, 256)), Layout("t", (6, 256), transpose=True)),
)  # fmt: skip


def _as_matrices(a: Any, b: Any) -> tuple[Any, Any]:
    """1-D operands as the (1, K) and (K, 1) matrices the kernel sees."""
    a2 = a.reshape((1, a.shape[0])) if a.ndim == 1 else a
    b2 = b.reshape((b.shape[0], 1)) if b.ndim == 1 else b
    return a2, b2


def _matmul_cases(tf32: bool) -> Callable[[np.random.Generator, DataType, Device], list[Case]]:
    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        result = []
        bounds = (-3.0, 3.0) if d.is_inexact else None
        for label, l1, l2 in SHAPES:
            g1, h1 = upload(draw(rng, l1.parent, d, bounds), l1, device)
            g2, h2 = upload(draw(rng, l2.parent, d, bounds), l2, device)
            if d.is_inexact:
                expected = np.matmul(f64(h1), f64(h2))
            else:  # exact, wrapping around as the dtype does
                wide = np.matmul(np.asarray(h1).astype(np.int64), np.asarray(h2).astype(np.int64))
                expected = np.asarray(wide).astype(d.to_numpy_dtype())
            a2, b2 = _as_matrices(g1, g2)
            ha, hb = _as_matrices(np.asarray(h1), np.asarray(h2))
            batch = np.broadcast_shapes(ha.shape[:-2], hb.shape[:-2])
            m, k, n = ha.shape[-2], ha.shape[-1], hb.shape[-1]
            kept = np.asarray(expected).reshape((*batch, m, n))

            def run(name: str, g1: GPUArray = g1, g2: GPUArray = g2) -> Any:
                with gp.config.use(allow_tf32=tf32):
                    return gp.matmul(g1, g2, backend=name)

            shapes = ((*batch, m, k), (*batch, k, n))

            def direct(kernel: Callable[..., Any], out: GPUArray, a: GPUArray = a2,
                       b: GPUArray = b2, shapes: Any = shapes) -> None:  # fmt: skip
                if out.size:
                    kernel(a.broadcast_to(shapes[0]), b.broadcast_to(shapes[1]), out, tf32)

            check = None
            if d.is_inexact:
                check = relative_frobenius(TF32_FROBENIUS if tf32 else FROBENIUS[d.name])
            result.append(Case(label, run, expected, d, direct, check=check, direct_expected=kept))
        return result

    return cases


def specs() -> list[OpSpec]:
    return [
        OpSpec("matmul", "linalg", MATMUL_DTYPES, _matmul_cases(False), "matmul"),
        OpSpec(
            "matmul",
            "linalg",
            (dt.float32,),
            _matmul_cases(True),
            "matmul",
            label="matmul-allow_tf32",
        ),
    ]
