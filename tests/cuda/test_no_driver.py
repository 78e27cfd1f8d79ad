"""Without a CUDA driver: the extension imports, says why, and the CPU backend still serves.

Each check runs in a fresh interpreter with PYGPUKIT_CUDA_DRIVER pointing at a library that
does not exist, so it holds on a GPU machine too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pygpukit_cuda._native")

MISSING = "/nonexistent/libcuda.so.1"


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYGPUKIT_CUDA_DRIVER": MISSING, **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=full_env, timeout=120,
    )  # fmt: skip


def test_extension_imports_and_names_the_missing_driver() -> None:
    result = run_python(
        """
        import json
        import pygpukit_cuda
        from pygpukit_cuda import _loader
        print(json.dumps({
            "native": _loader.native_status(),
            "driver": pygpukit_cuda.driver_status(),
            "cuda": pygpukit_cuda.is_cuda_available(),
        }))
        """
    )
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["native"].startswith("native extension _native")
    assert facts["driver"].startswith(f"CUDA driver not found ({MISSING}: ")
    assert facts["cuda"] is False


def test_cpu_backend_still_serves_and_cuda_reports_no_devices() -> None:
    result = run_python(
        """
        import json, warnings
        warnings.simplefilter("error")
        import pygpukit as gp
        from pygpukit._plugins import registry
        reg = registry()
        x = gp.asarray([1.0, 2.0, 3.0])
        y = (x + 1).to_numpy().tolist()
        backend = reg.devices["cuda"]
        print(json.dumps({
            "plugin": reg.plugins["cuda"].status,
            "providers": sorted(reg.providers),
            "devices": [str(d) for d in backend.devices()],
            "status": backend.status(),
            "device": str(x.device),
            "y": y,
            "cuda_available": gp.is_cuda_available(),
        }))
        """
    )
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["plugin"] == "loaded"
    assert "cuda" in facts["providers"] and "cpu" in facts["providers"]
    assert facts["devices"] == []
    assert "CUDA driver not found" in facts["status"]
    assert facts["device"] == "cpu"
    assert facts["y"] == [2.0, 3.0, 4.0]
    assert facts["cuda_available"] is False


def test_jit_explains_that_it_needs_a_gpu() -> None:
    result = run_python(
        """
        import pygpukit as gp
        try:
            gp.jit('extern "C" __global__ void k(float* x) {}', func="k")
        except RuntimeError as exc:
            print(exc)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "gp.jit needs a CUDA GPU" in result.stdout
    assert "CUDA driver not found" in result.stdout


def test_jit_without_the_cuda_plugin_says_to_install_it() -> None:
    result = run_python(
        """
        import pygpukit as gp
        try:
            gp.jit('extern "C" __global__ void k(float* x) {}', func="k")
        except RuntimeError as exc:
            print(exc)
        """,
        PYGPUKIT_DISABLE_PLUGINS="cuda",
    )
    assert result.returncode == 0, result.stderr
    assert "pip install pygpukit-cuda" in result.stdout


def test_diagnose_hook_reports_the_driver_and_the_fix() -> None:
    result = run_python(
        """
        import json
        from pygpukit_cuda import plugin
        checks = []
        plugin.pygpukit_diagnose(report=lambda name, ok, detail: checks.append([name, ok, detail]))
        print(json.dumps(checks))
        """
    )
    assert result.returncode == 0, result.stderr
    checks = {name: (ok, detail) for name, ok, detail in json.loads(result.stdout)}
    assert checks["CUDA extension"][0] is True
    ok, detail = checks["CUDA driver"]
    assert ok is False
    assert "CUDA driver not found" in detail and "fix: install the NVIDIA driver" in detail
    assert "NVRTC" in checks  # still reported, so JIT problems show up before a GPU exists


def test_doctor_cli_explains_the_missing_driver() -> None:
    result = run_python("import runpy; runpy.run_module('pygpukit', run_name='__main__')")
    if "No module named pygpukit.__main__" in result.stderr:
        pytest.skip("python -m pygpukit is not available in this pygpukit-core")
    full_env = {**os.environ, "PYGPUKIT_CUDA_DRIVER": MISSING}
    doctor = subprocess.run(
        [sys.executable, "-m", "pygpukit", "doctor"],
        capture_output=True, text=True, env=full_env, timeout=120,
    )  # fmt: skip
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "CUDA driver not found" in doctor.stdout
    assert "install the NVIDIA driver" in doctor.stdout
