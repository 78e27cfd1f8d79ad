"""The disk cache serves a second process: it loads kernels without compiling them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

SCRIPT = textwrap.dedent(
    """
    import json, numpy as np, pygpukit as gp
    from pygpukit_cuda import compiler
    x = gp.asarray(np.arange(10, dtype=np.float32), device="cuda")
    y = (x * 2 + 1).astype("float16")
    k = gp.jit('extern "C" __global__ void inc(float* x, int n)'
               '{ int i = threadIdx.x; if (i < n) x[i] += 1; }', func="inc")
    k(x, n=10)
    print(json.dumps({"stats": compiler.stats(), "y": y.to_numpy().tolist(),
                      "x": x.to_numpy().tolist()}))
    """
)


def run(cache: Path) -> dict:  # type: ignore[type-arg]
    env = {**os.environ, "PYGPUKIT_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_hits_the_disk_cache(tmp_path: Path) -> None:
    first = run(tmp_path)
    second = run(tmp_path)
    assert first["stats"]["compiled"] >= 3 and first["stats"]["disk_hits"] == 0
    assert second["stats"]["compiled"] == 0
    assert second["stats"]["disk_hits"] == first["stats"]["compiled"]
    assert first["y"] == second["y"] == [float(2 * i + 1) for i in range(10)]
    assert second["x"] == [float(i + 1) for i in range(10)]
