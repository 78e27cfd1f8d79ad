"""The provider's sdpa_causal (``pygpukit._ops.nn`` convention): causal flash attention with
grouped-query heads on any strides; block sizes autotuned per shape class (autotune.py)."""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
from typing import Any

from pygpukit import GPUArray
from pygpukit.backend import astype

from .. import autotune
from ..availability import interpret
from ..compiled import triton_type
from ..launch import Program, stream
from ..programs import attention as ap

_program = Program(ap.flash_causal)
#: a repeated call's launch plan by its operands' layout (the hot path: four pointers in;
#: building the arguments, the tuner's key and the constexprs cost ~20 us of Python a call)
_plans: dict[tuple[Any, ...], Any] = {}
#: (BM, BN, warps, stages, SCHED name, LAZY)
Config = tuple[int, int, int, int, str, bool]
#: how programs map to query blocks (programs/attention.py explains each)
SCHEDULES = {"heavy": 0, "pair": 1, "snake": 2, "zip": 3}
#: (BM, BN, warps, stages, SCHED, LAZY) per head width, Hopper-shaped (128-query tiles,
#: 64/128-key tiles, 3-4 stages while shared memory allows); the first is taken untimed
#: (graph capture, the interpreter), so it is each list's best guess. Shapes that spill
#: registers on sm_90 (Triton 3.9: 128x128 on 4 warps at d64; 128x64 and 64x128 on 4 warps
#: at d128) are left out, and so are 128-query tiles on 4 warps at d64 (255 registers).
#: "pair" evens out grids of about one wave of one resident program per SM; "snake" grids
#: with several resident per SM (d64's 128x64 on 8 warps: 128 registers, 64 KiB, two; its
#: 64x64 on 4: four). d64 starts with the old kernel's best on the H100 (64x64 pair, 32.9
#: us steady against 37.1 for 128x64 heavy, which now runs as 128x64 snake). LAZY skips
#: rescaling the accumulator until a row's max grows past 2^8 (programs/attention.py).
#: Eight candidates at most: each compiles once (~1-2 s) before any is timed.
#: The lists are scripts/probe_triton_attention.py's ranking on the H100 (2026-11-24, rotating
#: inputs past L2 as the benchmark calls, by the slower of bf16/f16): the best d64 entries
#: ran 32.8-33.5 us (torch SDPA 39.3), d128 48.6-49.3 (torch 57.0); entries that keep a
#: stack frame over 16 bytes under Triton 3.9 (pair on 4 warps with 64x128 at d64, 64x64 at
#: 3 stages at d128) are replaced by the next that does not.
CONFIGS_D64 = [(64, 128, 4, 3, "heavy", False), (128, 64, 8, 3, "snake", False),
               (128, 64, 8, 4, "snake", False), (64, 64, 4, 3, "pair", False),
               (64, 128, 4, 2, "heavy", False), (64, 64, 4, 4, "snake", False),
               (64, 64, 4, 3, "snake", False), (64, 64, 4, 4, "pair", False)]  # fmt: skip
#: head_dim 128: the 128x128 accumulator wants 8 warps (~200 registers: one resident
#: program per SM), or 64-query tiles on 4 (two per SM by shared memory at 3 stages)
CONFIGS_D128 = [(128, 64, 8, 3, "heavy", False), (128, 64, 8, 4, "heavy", False),
                (128, 64, 8, 3, "pair", False), (64, 64, 4, 3, "heavy", False),
                (64, 64, 4, 2, "pair", False), (128, 64, 8, 4, "pair", False),
                (64, 64, 4, 2, "heavy", False), (64, 64, 4, 3, "pair", True)]  # fmt: skip
CONFIGS = CONFIGS_D64
#: wide heads (BD > 128) keep smaller tiles so the Q tile and accumulator fit registers
CONFIGS_WIDE = [(64, 32, 4, 2, "heavy", False), (32, 32, 4, 2, "heavy", False)]
CONFIGS_F32 = [(64, 32, 4, 2, "heavy", False), (32, 32, 4, 2, "heavy", False)]
#: read K/V through tensor descriptors (TMA) where the layout allows: off by default until
#: the H100 shows it faster (PYGPUKIT_TRITON_TMA=1, or set this; tuned under its own key)
USE_TMA = os.environ.get("PYGPUKIT_TRITON_TMA", "") == "1"
#: programs per snake wave under the interpreter (no SMs to count): small, so the tests'
#: grids reverse several waves
INTERPRET_WAVE = 3


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


def sdpa_causal(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray, scale: float,
                config: Config | None = None) -> None:  # fmt: skip
    """out = causal attention of q over k, v; `config` (one of the CONFIGS lists' shape)
    skips the tuner, for probes that time each candidate themselves."""
    if out.size == 0:
        return
    pointers = (_ptr(q), _ptr(k), _ptr(v), _ptr(out))
    key = (out._device.index, q._shape, q._strides, k._shape, k._strides, v._shape,
           v._strides, out._shape, out._strides, q._dtype.name, k._dtype.name,
           v._dtype.name, out._dtype.name, float(scale), USE_TMA,
           not (pointers[0] | pointers[1] | pointers[2] | pointers[3]) & 15)  # fmt: skip
    plan = _plans.get(key) if config is None else None
    if plan is not None:
        plan(stream(key[0]), *pointers)
        return
    given = q
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
            sdpa_causal(q[i], k[i], v[i], out[i], scale, config)
        return
    nb, h, sq, d = q4.shape
    hkv, skv, dv = k4.shape[1], k4.shape[2], v4.shape[3]
    args: list[Any] = [q4, k4, v4, o4, h, h // hkv, sq, skv, d, dv, _wave(out), float(scale)]
    for a in (q4, k4, v4, o4):
        args += [s // a.dtype.itemsize for s in a.strides]
    tq = f"*{triton_type(q4.dtype.name)}"
    types = (tq, tq, tq, f"*{triton_type(o4.dtype.name)}", *(["i32"] * 7), "fp32",
             *(["i64"] * 16))  # fmt: skip
    bd, bdv = _pow2(d), _pow2(dv)
    ieee = q4.dtype.name == "float32"
    upcast = interpret() and q4.dtype.name == "bfloat16"
    even_d = bd == d and bdv == dv  # no head-dim masks: plain (vectorised) loads
    tma = USE_TMA and even_d and _tma_ready(k4) and _tma_ready(v4)

    def constexprs(c: Config) -> tuple[tuple[str, Any], ...]:
        bm, bn, _, _, sched, lazy = c
        return (("BM", bm), ("BN", bn), ("BD", bd), ("BDV", bdv), ("IEEE", ieee or upcast),
                ("UPCAST", upcast), ("EVEN_D", even_d), ("SCALE_POS", scale > 0),
                ("SCHED", SCHEDULES[sched]), ("LAZY", lazy), ("TMA", tma))  # fmt: skip

    def launch(c: Config) -> None:
        _program(grid(c, nb * h, sq), args, types, constexprs(c), num_warps=c[2],
                 num_stages=c[3])  # fmt: skip

    configs = (CONFIGS_F32 if ieee else CONFIGS_WIDE if max(bd, bdv) > 128
               else CONFIGS_D64 if max(bd, bdv) <= 64 else CONFIGS_D128)  # fmt: skip
    # the stored choice also names the candidate list (autotune.fingerprint) and the
    # program's source, so a changed list or kernel tunes again rather than reusing an index
    if config is not None:
        launch(config)
        return
    tuned = f"{_source()}|{q4.dtype.name}|{bd}|{bdv}|{_pow2(sq)}|{_pow2(skv)}|{h // hkv}"
    if tma:
        tuned += "|tma"
    chosen = autotune.choose("sdpa_causal", tuned, out.device.index, configs, launch)
    launch(chosen)
    # the operands went straight in (no cast, one merged batch axis, q4... views of them):
    # keep the tuned launch for the next call of this layout (the pointers are its slots)
    if q is given and not interpret() and autotune.settled("sdpa_causal", tuned, out.device.index):
        _program.bound(_plans, key, grid(chosen, nb * h, sq), args, types,
                       constexprs(chosen), (0, 1, 2, 3), chosen[2], chosen[3])  # fmt: skip


def grid(c: Config, heads: int, sq: int) -> tuple[int, ...]:
    """The launch grid of configuration `c` for `heads` (batch x heads) of `sq` queries."""
    blocks = -(-sq // c[0])
    if c[4] == "heavy":
        # heads on the first axis, query blocks on the second (the kernel numbers them from
        # the last), so every head's heavy blocks are dispatched before any light one
        return (heads, blocks)
    if c[4] == "pair":
        return (heads, -(-blocks // 2))
    return (heads * blocks,)


def _ptr(x: GPUArray) -> int:
    return x._buffer.ptr + x._offset


def _tma_ready(x: GPUArray) -> bool:
    """Whether a tensor descriptor can read `x`'s rows: unit last stride, 16-byte aligned
    base and other strides (Hopper's bulk copies fault otherwise)."""
    item = x.dtype.itemsize
    return (x.strides[-1] == item and all(s % 16 == 0 for s in x.strides[:-1])
            and (x.buffer.ptr + x.offset) % 16 == 0)  # fmt: skip


def _wave(out: GPUArray) -> int:
    """Programs per snake wave: the GPU's SM count (one program each per wave)."""
    if interpret():
        return INTERPRET_WAVE
    from pygpukit_cuda.device_facts import sm_count

    return int(sm_count(out.device.index))
