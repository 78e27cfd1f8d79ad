"""cuSOLVER loading without a GPU: where it is looked for, the status when it is absent,
the symbols the extension resolves, and the reason the provider's linalg kernels give."""

from __future__ import annotations

from pathlib import Path

import pygpukit as gp
import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import _loader, cusolver, linalg_solver

OPS = ("cholesky", "solve", "inv", "det", "slogdet", "eigh", "eigvalsh", "qr", "svd", "svdvals")


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cusolver, "_tried", False)
    monkeypatch.setattr(cusolver, "_lib", None)


def test_env_path_comes_first_then_what_pathfinder_finds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lib = tmp_path / "libcusolver.so.12"
    lib.write_bytes(b"not a library")
    monkeypatch.setenv("PYGPUKIT_CUSOLVER_PATH", str(tmp_path))
    monkeypatch.setattr(cusolver, "_pathfinder_path", lambda: "/wheel/libcusolver.so.12")
    assert cusolver.candidates() == [str(lib), "/wheel/libcusolver.so.12"]
    monkeypatch.delenv("PYGPUKIT_CUSOLVER_PATH")
    monkeypatch.setattr(cusolver, "_pathfinder_path", lambda: None)
    assert cusolver.candidates() == []


def test_native_open_names_the_path_and_the_missing_symbol(tmp_path: Path) -> None:
    bogus = tmp_path / "libcusolver.so.12"
    bogus.write_bytes(b"not a library")
    with pytest.raises(RuntimeError, match=str(bogus)):
        _loader.native().Cusolver(str(bogus))
    with pytest.raises(RuntimeError, match="no symbol cusolverGetVersion"):
        _loader.native().Cusolver("libm.so.6")


def test_absent_library_is_a_dispatch_reason_naming_the_wheel(
    monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    monkeypatch.setattr(cusolver, "candidates", lambda: ["libcusolver.so.999"])
    assert cusolver.library() is None
    why = cusolver.unavailable()
    assert why is not None and "nvidia-cusolver" in why and "libcusolver.so.999" in why
    provider = gp.KernelProvider("cusolver-probe", device_type="cuda")
    linalg_solver.register(provider)
    for op in OPS:
        refusal = provider.kernels[op].refusal((gp.float32,))
        assert refusal is not None and "nvidia-cusolver" in refusal


def test_disabled_by_environment(monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    monkeypatch.setenv("PYGPUKIT_CUSOLVER", "0")
    assert cusolver.library() is None
    assert "PYGPUKIT_CUSOLVER=0" in (cusolver.unavailable() or "")


def test_installed_wheel_opens_with_every_symbol(fresh: None) -> None:
    """With nvidia-cusolver installed, every entry point resolves (no GPU is needed to
    dlopen it and ask its version)."""
    if cusolver._pathfinder_path() is None:
        pytest.skip("nvidia-cusolver is not installed")
    lib = cusolver.library()
    assert lib is not None, cusolver.status()
    assert int(lib.version) >= 11000
    assert cusolver.unavailable() is None
    assert cusolver.status().startswith("cuSOLVER ")


def test_kernels_are_declared_for_the_four_dtypes() -> None:
    provider = gp.KernelProvider("cusolver-dtypes", device_type="cuda")
    linalg_solver.register(provider)
    kernel = provider.kernels["svd"]
    assert kernel.dtypes == frozenset(cusolver.DTYPES)
    assert kernel.refusal((gp.float16,)) is not None  # the core casts half types first
