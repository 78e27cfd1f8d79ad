"""Whisper-small's launches on the stub GPU of scripts/stub_cuda.py (no device needed): a decode
step is the fused step's kernels (cluster attention, the cache written at a device slot, no
flash or copy kernels), the encoder's attention is the flash kernel with no mask (its shift
argument is the key count), and gp.sdpa_causal passes Skv - Sq. Run in a subprocess: the stub
replaces process-wide state."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygpukit_cuda._native")

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

_CHECK = r"""
import os, struct
from collections import Counter
os.environ["PYGPUKIT_WHISPER_GRAPH"] = "0"
import numpy as np
import stub_cuda
ctx = stub_cuda.install()
names = stub_cuda.KERNEL_NAMES
import pygpukit as gp
import profile_whisper_stub as pw

def launches(fn):
    ctx.launches.clear()
    ctx.record = True
    fn()
    ctx.record = False
    return [(names[f], bytes(a)) for f, _g, _b, _s, _st, a in ctx.launches]

model = pw.build(gp)
feats = np.zeros((1, 80, 3000), np.float32)
enc = launches(lambda: model.encode(feats))
counts = Counter(n for n, _ in enc)
assert counts["pgk_flash_causal_float16_d64"] == 12, counts
assert not any(n.startswith(("pgk_softmax", "pgk_gemm_simt_float32", "pgk_cast")) for n in counts)
# the flash arguments: 4 pointers, H, G, Sq, Skv, 9 strides, the shift, the scale
args = struct.unpack("@QQQQ" + "q" * 14 + "f", next(a for n, a in enc if "flash" in n))
assert args[4:8] == (12, 1, 1500, 1500) and args[17] == 1500, args[4:18]
cross = model.cross_cache(model.encode(feats))
cache = model.new_cache(1, 40)
model.decode(np.array([pw.START]), cache, cross, last_only=True)
model.decode(np.array([[5]]), cache, cross, last_only=True)
step = Counter(n for n, _ in launches(
    lambda: model.decode(np.array([[6]]), cache, cross, last_only=True)))
# both attentions through one of the decode cluster kernels (no flash, no two-pass merge)
attends = sum(c for n, c in step.items() if n.startswith(("pgk_attend_short", "pgk_sdpa_cluster")))
assert attends == 24 and step["pgk_kv_write_float16"] == 12, step
assert step["pgk_decode_advance"] == 1 and step["pgk_embed_float16_int64"] == 2, step
assert not any("flash" in n or "copy" in n for n in step), step
assert sum(step.values()) <= 260, sum(step.values())
q = gp.zeros((1, 2, 10, 64), dtype="float16", device="cuda:0")
k = gp.zeros((1, 2, 30, 64), dtype="float16", device="cuda:0")
(name, a), = launches(lambda: gp.sdpa_causal(q, k, k))
assert struct.unpack("@QQQQ" + "q" * 14 + "f", a)[17] == 20
print("ok")
"""


def test_whisper_launches_on_the_stub_gpu() -> None:
    done = subprocess.run([sys.executable, "-c", _CHECK], cwd=SCRIPTS, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
