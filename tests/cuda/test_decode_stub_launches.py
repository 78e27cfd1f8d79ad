"""The decode step's launches on the stub GPU of scripts/stub_cuda.py (no device needed): the
cache attention is one cluster launch of 8 x (B * Hkv) blocks with the right arguments where
it serves and the two-kernel path elsewhere; a TinyLlama-shaped step launches the fused
kernels. Run in a subprocess: the stub replaces process-wide state."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygpukit_cuda._native")

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

_CHECK = r"""
import math, struct
import numpy as np
import stub_cuda
ctx = stub_cuda.install()
names = stub_cuda.KERNEL_NAMES
import pygpukit as gp
from pygpukit_cuda import attend_cluster

def launches(fn):
    ctx.launches.clear()
    ctx.record = True
    fn()
    ctx.record = False
    return [(names[f], tuple(g), tuple(b) if isinstance(b, (tuple, list)) else (b,), a)
            for f, g, b, _s, _st, a in ctx.launches]

def attention(b, hq, hkv, sq, length, d, dtype="bfloat16", window=0):
    q = gp.zeros((b, hq, sq, d), dtype=dtype, device="cuda:0")
    k = gp.zeros((b, hkv, length, d), dtype=dtype, device="cuda:0")
    idx = gp.zeros((b,), dtype=gp.int32, device="cuda:0")
    return launches(lambda: gp.sdpa_causal_cache(q, k, k, idx, idx, window=window))

from pygpukit_cuda import attend_short
# the short-context kernel takes the plain cache attention too (flags: no RoPE, int32 ends)
got = attention(1, 32, 4, 1, 512, 64)
assert [(n, g, b) for n, g, b, _ in got] == [("pgk_attend_short_bfloat16_64_r8", (8, 4, 1),
                                              (256,))], got  # fmt: skip
fields = struct.Struct(attend_short._ARGS).unpack(got[0][3])
assert len(set(fields[3:9])) == 1 and fields[3] == fields[0], fields[:12]  # never read
# q (B, Hq, S, D) as (b, s, h) strides: 32 x 64 x 2, 64 x 2, 64 x 2; caches (B, Hkv, L)
assert fields[12:15] == (4096, 128, 128) and fields[15:18] == (4 * 512 * 128, 512 * 128, 128)
assert fields[34:40] == (8, 1, 4, 512, 0, 0) and fields[41] == 0, fields[34:]
assert attention(3, 32, 8, 1, 256, 128, window=5)[0][:2] == (
    "pgk_attend_short_bfloat16_128_r4", (8, 24, 1))
attend_short.ENABLED = False  # PYGPUKIT_ATTEND_SHORT=0: the older cluster kernel
got = attention(1, 32, 4, 1, 512, 64)
assert len(got) == 1, got
name, grid, block, args = got[0]
assert name == "pgk_sdpa_cluster_bfloat16_64" and grid == (8, 4, 1) and block == (256,), got
fields = struct.Struct(attend_cluster._ARGS).unpack(args)
from pygpukit.core import dtypes as dt
from pygpukit_cuda.kernels.ctypes_table import ctype
assert fields[6:9] == (ctype(dt.bfloat16).code, ctype(dt.int32).code, ctype(dt.int32).code)
assert fields[9:16] == (32, 8, 1, 4, 512, 64, 64), fields[9:16]
assert math.isclose(fields[-2], 1 / 8) and fields[-1] == 0
# Llama-3-8B heads at batch 3: 8 blocks for each of 3 x 8 (row, kv head) pairs, D 128
name, grid, _, _ = attention(3, 32, 8, 1, 256, 128, window=5)[0]
assert name == "pgk_sdpa_cluster_bfloat16_128" and grid == (8, 24, 1)
# float32, 17 query rows per kv head, head_dim 256, a 8192-slot cache: the two-kernel path
for case in ((1, 32, 4, 1, 512, 64, "float32"), (1, 17, 1, 1, 64, 64), (1, 8, 1, 1, 64, 256),
             (1, 8, 1, 1, 8192, 64)):
    got = [n for n, *_ in attention(*case)]
    assert got[0].startswith("pgk_sdpa_cache_") and got[1].endswith("_merge"), (case, got)
attend_short.ENABLED = True
# head_dim 32 or 96, or q rows 8 bytes off 16-byte alignment: the older cluster kernel
for case in ((1, 32, 4, 1, 512, 32), (1, 8, 2, 1, 64, 96)):
    assert [n for n, *_ in attention(*case)][0].startswith("pgk_sdpa_cluster_"), case
qoff = gp.zeros((1, 8, 1, 72), dtype="bfloat16", device="cuda:0")[..., 4:68]
kb = gp.zeros((1, 2, 64, 64), dtype="bfloat16", device="cuda:0")
i0 = gp.zeros((1,), dtype=gp.int32, device="cuda:0")
got = [n for n, *_ in launches(lambda: gp.sdpa_causal_cache(qoff, kb, kb, i0, i0))]
assert got == ["pgk_sdpa_cluster_bfloat16_64"], got
attend_cluster.ENABLED = False  # PYGPUKIT_SDPA_CLUSTER=0: neither cluster kernel
assert [n for n, *_ in attention(1, 32, 4, 1, 512, 64)][0] == "pgk_sdpa_cache_bfloat16"
attend_cluster.ENABLED = True

# a driver refusing the cluster launch: the two-kernel path, then and for later calls;
# another launch failure is raised
plain = ctx.launch
def refusing(message):
    def launch(func, *rest):
        if names[func].startswith(("pgk_sdpa_cluster", "pgk_attend_short")):
            raise RuntimeError("cuLaunchKernel failed: " + message)
        return plain(func, *rest)
    return launch
ctx.launch = refusing("CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)")
try:
    attention(1, 32, 4, 1, 512, 64)
    raise AssertionError("the failure was swallowed")
except RuntimeError as exc:
    assert "ILLEGAL_ADDRESS" in str(exc)
ctx.launch = refusing("CUDA_ERROR_INVALID_CLUSTER_SIZE (invalid cluster size)")
got = [n for n, *_ in attention(1, 32, 4, 1, 512, 64)]
assert got == ["pgk_sdpa_cache_bfloat16", "pgk_sdpa_cache_bfloat16_merge"], got
assert attend_cluster._refused == {0}
ctx.launch = plain
assert [n for n, *_ in attention(1, 32, 4, 1, 512, 64)][0] == "pgk_sdpa_cache_bfloat16"
attend_cluster._refused.clear()

# the fused op: one cluster launch whose extra arguments follow the attention's
qkv = gp.zeros((1, 1, 40, 64), dtype="bfloat16", device="cuda:0")
cache = [gp.zeros((1, 4, 512, 64), dtype="bfloat16", device="cuda:0") for _ in range(2)]
table = gp.zeros((512, 32), dtype="bfloat16", device="cuda:0")
pos = gp.zeros((1, 1), dtype=gp.int64, device="cuda:0")
one = gp.zeros((1,), dtype=gp.int32, device="cuda:0")
def fused(qkv=qkv):
    return gp.rope_cache_attention(qkv[:, :, :32], qkv[:, :, 32:36], qkv[:, :, 36:], table,
                                   table.copy(), pos, cache[0], cache[1], one, one, one)
got = launches(fused)
# the short-context kernel first: 8 query rows per KV head -> the 8-row instance
assert [(n, g, b) for n, g, b, _ in got] == [
    ("pgk_attend_short_bfloat16_64_r8", (8, 4, 1), (256,))], got
fields = struct.Struct(attend_short._ARGS).unpack(got[0][3])
ptrs = fields[:12]
assert ptrs[0] == ptrs[3] - 32 * 128 == ptrs[4] - 36 * 128, ptrs  # q, new k, new v of qkv
assert ptrs[1] != ptrs[2] and ptrs[9] == ptrs[10] == ptrs[8], ptrs  # caches; `one` thrice
# q (B, S, Hq) strides, caches (B, Hkv, L), new k and v (B, S, Hkv), table rows, positions
# (B, S), slots, starts, ends
assert fields[12:15] == (5120, 5120, 128), fields[12:15]
assert fields[15:18] == fields[18:21] == (4 * 512 * 128, 512 * 128, 128), fields[15:21]
assert fields[21:24] == fields[24:27] == (5120, 5120, 128), fields[21:27]
assert fields[27:34] == (64, 64, 8, 8, 4, 4, 4), fields[27:34]
# G, Sq, Hkv, L, P, window, scale, flags (fused: bit 4; positions int64: bit 0)
assert fields[34:40] == (8, 1, 4, 512, 512, 0) and fields[41] == 16 | 1, fields[34:]
assert math.isclose(fields[40], 1 / 8, rel_tol=1e-6), fields[40]
# PYGPUKIT_ATTEND_SHORT=0's switch: the older cluster kernel, with its own arguments
attend_short.ENABLED = False
got = launches(fused)
attend_short.ENABLED = True
assert [(n, g) for n, g, _, _ in got] == [("pgk_sdpa_cluster_rope_bfloat16_64", (8, 4, 1))], got
fields = struct.Struct(attend_cluster._FUSED_ARGS).unpack(got[0][3])
assert fields[9:16] == (32, 8, 1, 4, 512, 64, 64) and fields[36] == 512, fields
# q strides as the (B, Hq, S, D) view of the projection: head 128 bytes, token 5120
assert fields[16:20] == (5120, 128, 5120, 2), fields[16:20]
# PYGPUKIT_SDPA_CLUSTER=0's switch turns both cluster kernels off: the two passes
attend_cluster.ENABLED = False
got = [n for n, *_ in launches(fused)]
attend_cluster.ENABLED = True
assert got == ["pgk_rope_kv_bfloat16_float32", "pgk_sdpa_cache_bfloat16",
               "pgk_sdpa_cache_bfloat16_merge"], got
# tables of another dtype than the cache's, a head_dim of 32, or 5 new tokens: not the
# short kernel
narrow, narrow_sin = table.astype("float32"), table.astype("float32")
got = [n for n, *_ in launches(lambda: gp.rope_cache_attention(
    qkv[:, :, :32], qkv[:, :, 32:36], qkv[:, :, 36:], narrow, narrow_sin, pos, cache[0],
    cache[1], one, one, one))]
assert got == ["pgk_sdpa_cluster_rope_bfloat16_64"], got
qkv32 = gp.zeros((1, 1, 40, 32), dtype="bfloat16", device="cuda:0")
cache32 = [gp.zeros((1, 4, 64, 32), dtype="bfloat16", device="cuda:0") for _ in range(2)]
t32 = gp.zeros((64, 16), dtype="bfloat16", device="cuda:0")
got = [n for n, *_ in launches(lambda: gp.rope_cache_attention(
    qkv32[:, :, :32], qkv32[:, :, 32:36], qkv32[:, :, 36:], t32, t32.copy(), pos,
    cache32[0], cache32[1], one, one, one))]
assert got == ["pgk_sdpa_cluster_rope_bfloat16_64"], got
qkv5 = gp.zeros((1, 5, 12, 64), dtype="bfloat16", device="cuda:0")
pos5 = gp.zeros((1, 5), dtype=gp.int64, device="cuda:0")
got = [n for n, *_ in launches(lambda: gp.rope_cache_attention(
    qkv5[:, :, :4], qkv5[:, :, 4:8], qkv5[:, :, 8:], table, table.copy(), pos5, cache[0],
    cache[1], one, one, one))]
assert got[0] == "pgk_rope_kv_bfloat16_float32", got  # 5 > 4 new tokens: the two passes
# Llama-3-8B heads (4 query heads per KV head, head_dim 128): the 4-row, 128 instance
qkv8 = gp.zeros((1, 1, 48, 128), dtype="bfloat16", device="cuda:0")
cache8 = [gp.zeros((1, 8, 512, 128), dtype="bfloat16", device="cuda:0") for _ in range(2)]
t8 = gp.zeros((512, 64), dtype="bfloat16", device="cuda:0")
got = launches(lambda: gp.rope_cache_attention(
    qkv8[:, :, :32], qkv8[:, :, 32:40], qkv8[:, :, 40:], t8, t8.copy(), pos, cache8[0],
    cache8[1], one, one, one))
assert [(n, g) for n, g, _, _ in got] == [("pgk_attend_short_bfloat16_128_r4", (8, 8, 1))]
# float32 tables: the fused kernel still (float math); float64 tables: the two passes
wide, wide_sin = table.astype("float64"), table.astype("float64")
got = [n for n, *_ in launches(lambda: gp.rope_cache_attention(
    qkv[:, :, :32], qkv[:, :, 32:36], qkv[:, :, 36:], wide, wide_sin, pos, cache[0],
    cache[1], one, one, one))]
assert got == ["pgk_rope_kv_bfloat16_float64", "pgk_attend_short_bfloat16_64_r8"], got

x = gp.zeros((1, 2048), dtype="bfloat16", device="cuda:0")
got = launches(lambda: gp.add_rmsnorm(x, x.copy(), x[0].copy()))
assert [(n, g, b) for n, g, b, _ in got] == [("pgk_add_rmsnorm_vec_bfloat16", (1,), (256,))]
got = launches(lambda: gp.add_rmsnorm(x[:, :2044], x[:, :2044], x[0, :2044]))
assert got[0][0] == "pgk_add_rmsnorm_bfloat16_bfloat16", got  # 2044 % 8: element kernel
print("ok")
"""


def test_decode_launch_geometry_on_the_stub_gpu() -> None:
    done = subprocess.run([sys.executable, "-c", _CHECK], cwd=SCRIPTS, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_tinyllama_step_launches_the_fused_kernels_on_the_stub_gpu() -> None:
    done = subprocess.run([sys.executable, "probe_decode.py", "--stub"], cwd=SCRIPTS,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[3:] if line}
    # 2 layers: one cluster launch each for RoPE, the cache write and the attention (the
    # short-context kernel), 4 norms,
    # one counter advance; none of the kernels they replace
    assert rows["pgk_attend_short_bfloat16_64_r8"][1:] == ["8x4x1", "256", "32", "2"]
    assert rows["pgk_add_rmsnorm_vec_bfloat16"][-1] == "4"
    assert rows["pgk_decode_advance"][-1] == "1"
    for old in ("pgk_rope_at_bfloat16_float32", "pgk_kv_write_bfloat16", "pgk_add_int32_int32",
                "pgk_sdpa_cache_bfloat16_merge", "pgk_rope_kv_bfloat16_float32"):  # fmt: skip
        assert old not in rows
