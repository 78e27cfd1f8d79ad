"""A kernel found in the disk cache is used without loading NVRTC in a new process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

compiler = pytest.importorskip("pygpukit_cuda.compiler")
loader = pytest.importorskip("pygpukit_cuda._loader")
if not loader.is_nvrtc_available():
    pytest.skip(f"no NVRTC here: {loader.nvrtc_status()}", allow_module_level=True)

SRC = 'extern "C" __global__ void facts_probe(float* x) { x[threadIdx.x] -= 2.0f; }'

PROBE = f"""
import json, time
from pygpukit_cuda import compiler, _loader
t0 = time.perf_counter()
image = compiler.compile_source({SRC!r}, "facts_probe", compiler.Target(90, True))
ms = (time.perf_counter() - t0) * 1e3
loaded = _loader._nvrtc_tried
print(json.dumps({{"from_cache": image.from_cache, "nvrtc_loaded": loaded, "ms": ms}}))
"""


def _probe(cache_dir: Path) -> dict[str, object]:
    env = {**os.environ, "PYGPUKIT_CACHE_DIR": str(cache_dir)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_cached_kernel_needs_no_nvrtc_in_a_new_process(tmp_path: Path) -> None:
    first = _probe(tmp_path)
    assert first == {**first, "from_cache": False, "nvrtc_loaded": True}
    facts = json.loads((tmp_path / "nvrtc-facts.json").read_text())
    assert tuple(facts["version"]) == loader.nvrtc_version()
    assert 90 in facts["archs"]
    second = _probe(tmp_path)
    assert second["from_cache"] is True
    assert second["nvrtc_loaded"] is False  # the facts file answered for NVRTC


def test_stale_facts_are_refreshed(tmp_path: Path) -> None:
    _probe(tmp_path)
    path = tmp_path / "nvrtc-facts.json"
    facts = json.loads(path.read_text())
    facts["fingerprint"] = [0, 0]  # as if the library had been replaced
    facts["version"] = [1, 0]
    path.write_text(json.dumps(facts))
    again = _probe(tmp_path)
    assert again["nvrtc_loaded"] is True
    assert tuple(json.loads(path.read_text())["version"]) == loader.nvrtc_version()
