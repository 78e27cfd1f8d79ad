"""The skinny matmul's launch plans (pure arithmetic) and, on the stub GPU of
scripts/stub_cuda.py (no device needed), which products gp.matmul sends to it and with
what grid, block, shared memory and arguments. The stub runs in a subprocess: it replaces
process-wide state."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import skinny
from pygpukit_cuda.kernels import skinny_source as ks

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
H100_SMS = 132
DECODE = [(1, 2048, 2048), (1, 2048, 2560), (1, 2048, 11264), (1, 5632, 2048),
          (1, 2048, 32000), (1, 1024, 1024), (1, 1024, 2816), (1, 2816, 1024),
          (8, 4096, 4096), (3, 24, 65536), (8, 8, 8192), (5, 100000, 16)]  # fmt: skip


@pytest.mark.parametrize("layout", ["kn", "nk"])
@pytest.mark.parametrize(("m", "k", "n"), DECODE)
def test_plans_cover_k_once_and_fit_the_device(layout: str, m: int, k: int, n: int) -> None:
    k = k if layout == "kn" else -(-k // 8) * 8  # nk needs K % 8 == 0
    p = skinny.plan(layout, m, n, k, H100_SMS)
    assert p.splits >= 1 and p.kc >= 1
    assert (p.splits - 1) * p.kc < k <= p.splits * p.kc  # every split has rows, K covered
    assert p.shared <= ks.X_SLICE_BYTES  # with <= 16 KB static: under 48 KB
    width = ks.KN_TILE if layout == "kn" else 8 * ks.nk_shape(m)[0]
    assert p.tiles == -(-n // width)
    if layout == "nk" and p.splits > 1:
        assert p.kc % 256 == 0  # x slices stay 16-byte aligned in shared memory
    if layout == "kn" and p.splits > 1:
        assert p.kc % 32 == 0
    assert p.workspace_floats(n) == (0 if p.splits == 1 else p.splits * m * n)


def test_big_decode_weights_fill_the_h100() -> None:
    # 1x2048 @ 2048x11264 (46 MB): 176 tiles x 3 splits = 528 blocks = 4 per SM
    p = skinny.plan("kn", 1, 11264, 2048, H100_SMS)
    assert p.tiles * p.splits >= H100_SMS * 3
    # the down projection 1x5632 @ 5632x2048 in (out, in) storage: K split 4+ ways
    p = skinny.plan("nk", 1, 2048, 5632, H100_SMS)
    assert p.tiles == 128 and p.splits >= 4 and p.tiles * p.splits >= H100_SMS * 3
    # 8 rows: the x slice caps a split at 768 rows of K
    p = skinny.plan("kn", 8, 4096, 4096, H100_SMS)
    assert p.kc <= 768 and p.splits >= 6


_CHECK = r"""
import struct
import numpy as np
import stub_cuda
ctx = stub_cuda.install()
import pygpukit as gp
from pygpukit_cuda import skinny
from pygpukit_cuda.kernels import skinny_source as ks

def run(x, w):
    ctx.launches.clear()
    ctx.record = True
    y = gp.matmul(x, w)
    ctx.record = False
    return y, list(ctx.launches)

bf = gp.bfloat16
x = gp.asarray(np.ones((1, 2048), np.float32), device="cuda:0").astype(bf)
w = gp.asarray(np.ones((2048, 11264), np.float32), device="cuda:0").astype(bf)
y, launches = run(x, w)  # the first call zeroes the stream's counters: one fill kernel
assert y.shape == (1, 11264) and len(launches) == 2, launches
func, grid, block, shared, stream, args = launches[1]
p = skinny.plan("kn", 1, 11264, 2048, 132)
assert tuple(grid)[:2] == p.grid and tuple(block)[0] == 256, (grid, block)
assert shared == p.shared, shared
vals = struct.unpack(ks.ARG_FORMAT, args)
assert vals[5:] == (11264, 2048, p.kc, 2048, 1, 11264, 11264), vals
assert vals[3] != 0 and vals[4] != 0  # workspace and counters (several splits)
counters = vals[4]
y, launches = run(x, w)  # the same stream reuses its counter block: one launch
assert len(launches) == 1 and struct.unpack(ks.ARG_FORMAT, launches[0][5])[4] == counters

# (out, in) storage seen through .mT: the nk kernel, W's row stride is K
wt = gp.asarray(np.ones((2048, 5632), np.float32), device="cuda:0").astype(bf)
x2 = gp.asarray(np.ones((3, 5632), np.float32), device="cuda:0").astype(bf)
y, launches = run(x2, wt.mT)
p = skinny.plan("nk", 3, 2048, 5632, 132)
vals = struct.unpack(ks.ARG_FORMAT, launches[0][5])
assert len(launches) == 1 and tuple(launches[0][1])[:2] == p.grid
assert vals[5:] == (2048, 5632, p.kc, 5632, 1, 5632, 2048), vals
assert "skinny nk kernel" in skinny.explain(x2, wt.mT)

# strided x (a column slice) is read through its strides
xs = gp.asarray(np.ones((2, 4096), np.float32), device="cuda:0").astype(bf)[:, :2048]
y, launches = run(xs, w)
vals = struct.unpack(ks.ARG_FORMAT, launches[0][5])
assert vals[8:10] == (4096, 1), vals

# refused: 9 rows, float32, N % 8 != 0, a small weight, misaligned data, turned off
def on(shape, dtype=bf):
    return gp.ones(shape, dtype=dtype, device="cuda:0")

cases = {
    "rows": (gp.ones((9, 2048), dtype=bf, device="cuda:0"), w),
    "float16 and bfloat16": (on((1, 2048), gp.float32), on((2048, 512), gp.float32)),
    "16-byte": (x, gp.ones((2048, 1001), dtype=bf, device="cuda:0")),
    "under": (on((1, 64)), on((64, 64))),
    "aligned": (x, gp.ones((2048, 1040), dtype=bf, device="cuda:0")[:, 4:1028]),
}
skinny_ids = {hash(name) & 0xFFFF for name, _ in ks.all_sources()}  # the stub's handles
assert hash("pgk_skinny_kn_bfloat16_m1") & 0xFFFF in skinny_ids
for why, (a, b) in cases.items():
    assert why in skinny.explain(a, b), (why, skinny.explain(a, b))
    _, launches = run(a, b)
    assert launches and not skinny_ids & {f for f, *_ in launches}, (why, launches)
assert "kernel: skinny kn kernel" in str(gp.explain("matmul", x, w))
assert "kernel: cuBLASLt" in str(gp.explain("matmul", cases["16-byte"][0], cases["16-byte"][1]))
assert "kernel" not in str(gp.explain("matmul", on((2, 4), gp.float32), on((4, 2), gp.float32)))
assert "skinny kn" in skinny.explain(x.reshape((-1,)), w)  # 1-D x: one row
skinny.ENABLED = False
assert "turned off" in skinny.explain(x, w)
print("ok")
"""


def test_matmul_takes_the_skinny_kernel_on_the_stub_gpu() -> None:
    done = subprocess.run([sys.executable, "-c", _CHECK], cwd=SCRIPTS, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
