"""The benchmark on a CUDA GPU (run on the device machine; skipped without a GPU): every
family's quick run yields checked rows served by the cuda provider or 'missing' rows,
timed with device events, and the cached kernel comes from the disk cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _gpu_missing() -> str | None:
    try:
        import pygpukit_cuda._loader as loader
    except ImportError as exc:
        return f"pygpukit-cuda is not installed ({exc})"
    if loader.device_count() == 0:
        return f"no CUDA GPU: {loader.driver_status()}"
    if not loader.is_nvrtc_available():
        return f"no NVRTC: {loader.nvrtc_status()}"
    return None


REASON = _gpu_missing()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def test_quick_run_on_cuda(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pygpukit.benchmark", "--quick", "--device", "cuda",
         "--json", str(path)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(path.read_text())
    assert data["settings"]["timer"] == "events"
    assert data["environment"]["device"]["type"] == "cuda"
    rows = {r["key"]: r for r in data["rows"]}
    for row in data["rows"]:
        assert row["status"] in ("PASS", "missing"), row
        if row["status"] == "PASS" and row["family"] != "compile":
            assert row["provider"] == "cuda"
        for peer in row["peers"]:
            assert peer["name"] in ("torch", "cupy")
            assert peer["stats"] is not None or peer["note"], peer
    assert rows["elementwise/add/2^12 float32"]["status"] == "PASS"
    cached = rows["compile/jit/cached kernel, first launch, new process"]
    assert cached["status"] == "PASS", cached
    assert cached["extra"]["compile_work_ms"] <= cached["extra"]["jit_ms"]
