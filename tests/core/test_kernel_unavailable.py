"""A kernel registered with `unavailable=` is passed over while its library is missing,
and explain() gives the provider's reason (how the cuda backend reports cuSOLVER)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pygpukit as gp
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    yield from testsite.isolated_config(monkeypatch, tmp_path)


def test_unavailable_kernel_is_passed_over_with_its_reason(project: Path) -> None:
    missing: list[str | None] = ["libfastsolve.so not found: pip install fastsolve"]
    fast = gp.KernelProvider("fastsolve", device_type="cpu", priority=100)
    ran: list[str] = []

    def inv(x: Any, out: gp.GPUArray) -> None:
        ran.append("inv")
        out[...] = 0.0  # a wrong answer on purpose: it shows which kernel ran

    fast.add("inv", inv, [gp.float64], unavailable=lambda: missing[0])

    class Plugin:
        @gp.hookimpl
        def pygpukit_register_kernels(self, register: Callable[[Any], None]) -> None:
            register(fast)

    x = gp.eye(3, dtype=gp.float64)
    gp.plugins.register(Plugin(), "fastsolve-plugin")
    try:
        expl = gp.explain("inv", x)
        assert expl.chosen == "cpu"
        assert "pip install fastsolve" in str(expl)
        assert gp.linalg.inv(x).tolist() == gp.eye(3, dtype=gp.float64).tolist()
        assert ran == []
        missing[0] = None  # installed now: a new settings snapshot asks again
        with gp.config.use(backend=["fastsolve"]):
            assert gp.explain("inv", x).chosen == "fastsolve"
            assert gp.linalg.inv(x).tolist() == [[0.0] * 3] * 3
        assert ran == ["inv"]
    finally:
        gp.plugins.unregister("fastsolve-plugin")
