"""The causal flash attention program under Triton's interpreter against NumPy, on shapes
that reach each of its paths: unmasked and diagonal key tiles, padded head dims (no
EVEN_D), grouped-query heads, more keys than queries, a negative scale, bf16/f16/f32; and
again under each other schedule of query blocks to programs (pair: a heavy and a light
block each, odd and even block counts; snake and zip: one axis of ranked blocks, snake
over waves of 3 programs); and with the lazy rescale (scale 1.0 at d64: maxima that
jump past 2^8 after the first tile, and ones that do not); and with K/V read through tensor
descriptors (TMA; the padded head dims keep pointer loads)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pygpukit.triton import availability

pytestmark = pytest.mark.skipif(not availability.status()[0], reason=availability.status()[1])

_CODE = """
    import sys
    import numpy as np, pygpukit as gp
    from pygpukit.triton.kernels import attention as ka

    if sys.argv[1] == "tma":  # K/V through tensor descriptors where the layout allows
        ka.USE_TMA = True
    elif sys.argv[1] != "default":  # the interpreter takes each list's first config
        sched, _, lazy = sys.argv[1].partition("+")
        for name in ("CONFIGS_D64", "CONFIGS_D128", "CONFIGS_F32", "CONFIGS_WIDE"):
            setattr(ka, name, [(32, 32, 4, 2, sched, bool(lazy))])

    def ref(q, k, v, scale):
        g = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, g, axis=-3), np.repeat(v, g, axis=-3)
        s = np.einsum("...qd,...kd->...qk", q, k) * scale
        sq, skv = s.shape[-2:]
        s = np.where(np.arange(skv)[None, :] <= np.arange(sq)[:, None] + skv - sq, s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        return np.einsum("...qk,...kd->...qd", p / p.sum(-1, keepdims=True), v)

    rng = np.random.default_rng(0)
    # dtype, batch, heads, kv heads, queries, keys, head dim, scale
    cases = [("float32", 2, 2, 1, 70, 70, 64, 1.0), ("float16", 1, 4, 2, 130, 130, 64, 0.125),
             ("float32", 1, 2, 2, 40, 90, 24, 0.3), ("float32", 1, 2, 1, 90, 91, 32, 0.2),
             ("bfloat16", 1, 2, 2, 200, 200, 128, 0.088),
             ("float32", 1, 1, 1, 150, 150, 16, -0.5), ("float16", 1, 2, 1, 300, 300, 128, 0.09)]
    for dt, b, h, hk, sq, skv, d, sc in cases:
        arrs = [rng.standard_normal(s).astype(np.float32)
                for s in ((b, h, sq, d), (b, hk, skv, d), (b, hk, skv, d))]
        q, k, v = (gp.asarray(a).astype(dt) for a in arrs)
        got = gp.sdpa_causal(q, k, v, sc, backend="triton").astype("float32").to_numpy()
        want = ref(*(a.astype("float32").to_numpy() for a in (q, k, v)), sc)
        tol = 1e-4 if dt == "float32" else 3e-2
        print(dt, sq, skv, d, sc, float(np.abs(got - want).max()) < tol)
"""


@pytest.mark.slow
@pytest.mark.parametrize("programs", ["default", "pair", "snake", "zip", "heavy+lazy", "tma"])
def test_flash_attention_paths_match_numpy(tmp_path: Path, programs: str) -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYGPUKIT_CACHE_DIR": str(tmp_path),
           "PYGPUKIT_DEVICE": "cpu"}  # fmt: skip
    done = subprocess.run([sys.executable, "-W", "ignore::RuntimeWarning", "-c",
                           textwrap.dedent(_CODE), programs], capture_output=True, text=True,
                          timeout=600, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 7 and all(line.endswith("True") for line in lines), done.stdout
