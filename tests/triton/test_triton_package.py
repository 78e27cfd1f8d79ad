"""pygpukit-triton's package and plugin: the provider, the seeds' API names, explain's
reasons, and the path without Triton (a subprocess where `import triton` fails)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pygpukit as gp
import pytest
from pygpukit._plugins import registry
from pygpukit.triton import availability, from_gpuarray, kernels, triton_available
from pygpukit.triton.kernels.elementwise_ops import BINARY_OPS, PLUGIN_OPS, UNARY_OPS
from pygpukit.triton.provider import OPS, UnavailableKernel


def _run(code: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYGPUKIT_CACHE_DIR": str(tmp_path / "cache"), **env}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env=full)  # fmt: skip


def _no_triton(tmp_path: Path) -> dict[str, str]:
    """An environment in which `import triton` raises ImportError (a shadowing package)."""
    shim = tmp_path / "shim" / "triton"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('No module named triton (test shim)')\n")
    return {"PYTHONPATH": str(tmp_path / "shim") + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_the_provider_is_registered_for_its_device_type() -> None:
    provider = registry().providers["triton"]
    assert provider.plugin == "triton"
    assert provider.device_type == ("cpu" if availability.interpret() else "cuda")
    assert set(OPS) | set(UNARY_OPS) | set(BINARY_OPS) | set(PLUGIN_OPS) == set(provider.kernels)


def test_seed_names_are_public() -> None:
    assert callable(triton_available) and callable(from_gpuarray)
    for name in ("rmsnorm", "layernorm", "softmax", "rotary"):
        assert callable(getattr(kernels, name))
    assert gp.triton.from_gpuarray is from_gpuarray  # the gp.triton namespace


def test_from_gpuarray_shares_memory_and_reads_strides_in_elements() -> None:
    if not triton_available():
        pytest.skip(availability.status()[1])
    import triton.language as tl

    x = gp.asarray(np.arange(24, dtype=np.float32).reshape(4, 6))
    view = x[1:, ::2]
    t = from_gpuarray(view)
    assert t.data_ptr() == x.buffer.ptr + 6 * 4
    assert t.strides == (6, 2) and t.shape == (3, 3) and t.dtype == tl.float32
    with pytest.raises(TypeError, match="GPUArray"):
        from_gpuarray(np.zeros(3))  # type: ignore[arg-type]


def test_without_triton_explain_and_doctor_say_why(tmp_path: Path) -> None:
    # the provider serves cpu then; the arrays go there too, or on a machine with a GPU they
    # land on cuda and the refusal is the device, not the missing Triton
    env = {**_no_triton(tmp_path), "TRITON_INTERPRET": "1", "PYGPUKIT_DEVICE": "cpu"}
    done = _run("""
        import numpy as np, pygpukit as gp
        from pygpukit.triton import triton_available
        x = gp.asarray(np.ones((2, 3), np.float32))
        print("available", triton_available())
        print(gp.explain("softmax", x, backend="triton"))
        print("softmax works", float(gp.softmax(x).to_numpy().sum()))  # the rest works
        try:
            gp.softmax(x, backend="triton")
        except Exception as exc:
            print("refused:", type(exc).__name__, exc)
    """, env, tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "available False" in done.stdout
    assert "triton not installed" in done.stdout
    assert "softmax works 2.0" in done.stdout
    assert "refused: DispatchError" in done.stdout
    doctor = subprocess.run([sys.executable, "-m", "pygpukit", "doctor"], capture_output=True,
                            text=True, timeout=300, env={**os.environ, **env})  # fmt: skip
    assert "triton not installed" in doctor.stdout, doctor.stdout + doctor.stderr


def test_unavailable_kernels_refuse_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from pygpukit.triton import provider as prov

    monkeypatch.setattr(availability, "status", lambda: (False, "triton not installed (test)"))
    p = prov.make_provider()
    kernel = p.kernels["rmsnorm"]
    assert isinstance(kernel, UnavailableKernel)
    assert kernel.refusal((gp.float32,)) == "triton not installed (test)"
    with pytest.raises(ImportError, match="cannot run rmsnorm: triton not installed"):
        kernel.fn()


def test_provider_table_lists_the_ops_it_serves() -> None:
    if not triton_available():
        pytest.skip(availability.status()[1])
    from pygpukit.triton.provider import _table

    assert {op for op, _, _ in _table()} == set(OPS) | set(UNARY_OPS) | set(BINARY_OPS) | set(
        PLUGIN_OPS
    )


def test_swiglu_is_registered_with_a_conformance_reference() -> None:
    """The conformance suite can test any provider's swiglu: the plugin gave a reference,
    inputs and its public function (`pytest --pygpukit-backend=triton --pyargs
    pygpukit.testing.conformance -k swiglu` runs it on a GPU)."""
    from pygpukit import ops_catalog
    from pygpukit.testing.conformance.catalog import catalog
    from pygpukit.triton.ops import swiglu, swiglu_inputs, swiglu_reference

    check = ops_catalog.convention("swiglu").check
    assert check is not None and check.function is swiglu
    assert {d.name for d in check.dtypes} == {"float16", "bfloat16", "float32", "float64"}
    gate, up = swiglu_inputs(np.random.default_rng(1), gp.float32)
    assert gate.shape == up.shape and gate.dtype == np.float32
    g = np.array([-2.0, 0.0, 3.0])
    np.testing.assert_allclose(swiglu_reference(g, g), g * g / (1 + np.exp(-g)))
    assert "swiglu" in {s.name for s in catalog()}
