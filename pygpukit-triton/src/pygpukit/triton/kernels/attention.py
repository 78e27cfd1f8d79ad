"""The provider's sdpa_causal (``pygpukit._ops.nn`` convention): causal flash attention with
grouped-query heads on any strides; block sizes autotuned per shape class (autotune.py)."""

from __future__ import annotations

import functools
import hashlib
import inspect
from typing import Any

from pygpukit import GPUArray
from pygpukit.backend import astype

from .. import autotune
from ..availability import interpret
from ..compiled import triton_type
from ..launch import Program
from ..programs import attention as ap

_program = Program(ap.flash_causal)
#: (BM, BN, warps, stages, PAIR) per head width, Hopper-shaped (128-query tiles, 64/128-key
#: tiles, 3-4 stages while shared memory allows); the first is taken untimed (graph
#: capture, the interpreter), so it is each list's best guess. Shapes that spill registers
#: on sm_90 (Triton 3.9: 128x128 on 4 warps at d64; 128x64 and 64x128 on 4 warps at d128)
#: are left out, and so are 128-query tiles on 4 warps at d64 (255 registers, no headroom).
#: PAIR (one program: a heavy and a light query block) evens out grids of about one wave.
#: Eight candidates at most: each compiles once (~1-2 s) before any is timed.
CONFIGS_D64 = [(128, 64, 8, 3, False), (128, 64, 8, 3, True), (64, 64, 4, 3, True),
               (128, 128, 8, 3, False), (128, 64, 8, 4, False), (64, 64, 4, 3, False),
               (64, 64, 4, 4, True), (128, 64, 8, 4, True)]  # fmt: skip
#: head_dim 128: the 128x128 accumulator wants 8 warps, or 64-query tiles on 4 (but not
#: PAIR on 4 warps: 255 registers and a 24-byte spill)
CONFIGS_D128 = [(128, 64, 8, 3, False), (128, 128, 8, 2, False), (128, 64, 8, 4, False),
                (64, 64, 4, 3, False), (64, 64, 4, 4, False), (64, 128, 8, 2, False),
                (128, 64, 8, 3, True)]  # fmt: skip
CONFIGS = CONFIGS_D64
#: wide heads (BD > 128) keep smaller tiles so the Q tile and accumulator fit registers
CONFIGS_WIDE = [(64, 32, 4, 2, False), (32, 32, 4, 2, False)]
CONFIGS_F32 = [(64, 32, 4, 2, False), (32, 32, 4, 2, False)]


@functools.cache
def _source() -> str:
    """A digest of the attention program's source (its helpers included)."""
    return hashlib.sha1(inspect.getsource(ap).encode()).hexdigest()[:10]


def _pow2(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())  # tl.dot wants every tile side >= 16


def _flat(x: GPUArray) -> GPUArray | None:
    """x as (batch, heads, seq, dim) with one merged batch axis, or None if the batch axes
    do not merge."""
    if x.ndim == 4:
        return x
    try:  # a view or nothing: `out` must be written where the caller reads it
        return x.reshape((-1, *x.shape[-3:]), copy=False)
    except ValueError:
        return None


def sdpa_causal(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray, scale: float) -> None:
    if out.size == 0:
        return
    if not q.dtype is k.dtype is v.dtype:  # tl.dot multiplies one element type
        q, k, v = (astype(a, out.dtype, copy=False) for a in (q, k, v))
    q4, k4, v4, o4 = (_flat(a) for a in (q, k, v, out))
    if (
        q4 is None
        or k4 is None
        or v4 is None
        or o4 is None
        or (q4.shape[0] != o4.shape[0] or k4.shape[0] != o4.shape[0])
    ):
        for i in range(out.shape[0]):  # unmergeable batch axes: one launch per outer item
            sdpa_causal(q[i], k[i], v[i], out[i], scale)
        return
    nb, h, sq, d = q4.shape
    hkv, skv, dv = k4.shape[1], k4.shape[2], v4.shape[3]
    args: list[Any] = [q4, k4, v4, o4, h, h // hkv, sq, skv, d, dv, float(scale)]
    for a in (q4, k4, v4, o4):
        args += [s // a.dtype.itemsize for s in a.strides]
    tq = f"*{triton_type(q4.dtype.name)}"
    types = (tq, tq, tq, f"*{triton_type(o4.dtype.name)}", *(["i32"] * 6), "fp32",
             *(["i64"] * 16))  # fmt: skip
    bd, bdv = _pow2(d), _pow2(dv)
    ieee = q4.dtype.name == "float32"
    upcast = interpret() and q4.dtype.name == "bfloat16"

    def launch(c: tuple[int, int, int, int, bool]) -> None:
        bm, bn, warps, stages, pair = c
        consts = (("BM", bm), ("BN", bn), ("BD", bd), ("BDV", bdv), ("IEEE", ieee or upcast),
                  ("UPCAST", upcast), ("EVEN_D", even_d), ("SCALE_POS", scale > 0),
                  ("PAIR", pair))  # fmt: skip
        # heads on the first axis, query blocks on the second (the kernel numbers them from
        # the last), so every head's heavy blocks are dispatched before any light one
        blocks = -(-sq // bm)
        _program((nb * h, -(-blocks // 2) if pair else blocks), args, types, consts,
                 num_warps=warps, num_stages=stages)  # fmt: skip

    even_d = bd == d and bdv == dv  # no head-dim masks: plain (vectorised) loads
    configs = (CONFIGS_F32 if ieee else CONFIGS_WIDE if max(bd, bdv) > 128
               else CONFIGS_D64 if max(bd, bdv) <= 64 else CONFIGS_D128)  # fmt: skip
    # the stored choice also names the candidate list (autotune.fingerprint) and the
    # program's source, so a changed list or kernel tunes again rather than reusing an index
    key = f"{_source()}|{q4.dtype.name}|{bd}|{bdv}|{_pow2(sq)}|{_pow2(skv)}|{h // hkv}"
    launch(autotune.choose("sdpa_causal", key, out.device.index, configs, launch))
