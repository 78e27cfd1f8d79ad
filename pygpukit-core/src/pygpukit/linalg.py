"""`pygpukit.linalg`: the Array API's linalg extension.

The factorizations (cholesky, det, eigh, eigvalsh, inv, qr, slogdet, solve, svd, svdvals)
dispatch like any other op, each to a kernel of its own name (conventions in
``pygpukit._ops.factorizations``), so a backend that provides them runs ``gp.linalg``
on its device; the rest are built from those, the elementwise ops, the reductions and
matmul. Inputs are float32, float64, complex64 or complex128 (float16/bfloat16 are
computed in float32); leading dimensions are a batch.
"""

from ._ops.factorizations import (
    EighResult,
    LinAlgError,
    QRResult,
    SlogdetResult,
    SVDResult,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from ._ops.linalg import matmul, matrix_transpose, tensordot, vecdot
from ._ops.matrix_functions import (
    cross,
    diagonal,
    matrix_norm,
    matrix_power,
    matrix_rank,
    outer,
    pinv,
    trace,
    vector_norm,
)

__all__ = [
    "EighResult", "LinAlgError", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cross",
    "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power",
    "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
    "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]  # fmt: skip
