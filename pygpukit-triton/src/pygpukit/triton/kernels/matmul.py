"""The provider's matmul (``pygpukit._ops.linalg`` convention): batched, strided, tile
sizes autotuned per problem shape class and kept on disk (autotune.py)."""

from __future__ import annotations

from typing import Any

from pygpukit import GPUArray

from .. import autotune
from ..availability import interpret
from ..compiled import triton_type
from ..launch import Program
from ..programs import matmul as mp

_program = Program(mp.matmul)
#: (BM, BN, BK, warps, stages): the usual Hopper/Ampere tiles, small ones for thin shapes
CONFIGS = [(128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4),
           (64, 64, 32, 4, 4), (32, 64, 32, 4, 4), (16, 64, 64, 4, 3)]  # fmt: skip
#: float32 products need more registers per element: smaller tiles
CONFIGS_F32 = [(64, 64, 32, 4, 3), (128, 64, 32, 8, 3), (32, 64, 32, 4, 3), (16, 64, 32, 4, 3)]


def _batch(x: GPUArray) -> tuple[int, int] | None:
    """(count, element stride) of x's batch axes merged into one, or None if they don't merge."""
    size, stride, it = 1, 0, x.dtype.itemsize
    for n, s in zip(reversed(x.shape[:-2]), reversed(x.strides[:-2]), strict=True):
        if n == 1:
            continue
        if size == 1:
            size, stride = n, s // it
        elif s // it == stride * size or (s == 0 and stride == 0):
            size *= n
        else:
            return None
    return size, stride


def _bucket(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())


def matmul(x1: GPUArray, x2: GPUArray, out: GPUArray, allow_tf32: bool) -> None:
    ba, bb, bc = _batch(x1), _batch(x2), _batch(out)
    if ba is None or bb is None or bc is None:
        for i in range(out.shape[0]):  # unmergeable batch axes: one launch per outer item
            matmul(x1[i], x2[i], out[i], allow_tf32)
        return
    m, k = x1.shape[-2], x1.shape[-1]
    n = x2.shape[-1]
    batch = bc[0]
    f32 = out.dtype.name == "float32"
    t = f"*{triton_type(out.dtype.name)}"
    i1, i2, io = x1.dtype.itemsize, x2.dtype.itemsize, out.dtype.itemsize
    args: list[Any] = [x1, x2, out, m, n, k, ba[1], x1.strides[-2] // i1, x1.strides[-1] // i1,
                       bb[1], x2.strides[-2] // i2, x2.strides[-1] // i2, bc[1],
                       out.strides[-2] // io, out.strides[-1] // io]  # fmt: skip
    types = (t, t, t, *(["i32"] * 3), *(["i64"] * 9))
    tf32 = bool(allow_tf32 and f32)
    upcast = interpret() and out.dtype.name == "bfloat16"

    def launch(c: tuple[int, int, int, int, int]) -> None:
        bm, bn, bk, warps, stages = c
        grid = (-(-m // bm) * -(-n // bn), batch)
        consts = (("ALLOW_TF32", tf32), ("BM", bm), ("BN", bn), ("BK", bk), ("GROUP", 8),
                  ("UPCAST", upcast))  # fmt: skip
        _program(grid, args, types, consts, num_warps=warps, num_stages=stages)

    configs = CONFIGS_F32 if f32 and not tf32 else CONFIGS
    key = f"{out.dtype.name}|{tf32}|{_bucket(m)}|{_bucket(n)}|{_bucket(k)}"
    launch(autotune.choose("matmul", key, out.device.index, configs, launch))
