"""pygpukit-audio registers `gp.asr` (Whisper on first use) and checks its dependencies."""

from __future__ import annotations

import pygpukit as gp
import pygpukit.asr
from pygpukit.asr import plugin


def test_namespace_is_the_package_and_whisper_loads_lazily() -> None:
    info = gp.plugins.get("asr")
    assert info.namespaces == ["asr"]
    assert gp.asr is pygpukit.asr
    assert gp.asr.whisper.load is pygpukit.asr.whisper.load


def test_doctor_checks_whispers_dependencies() -> None:
    checks: list[tuple[str, bool, str]] = []
    plugin.pygpukit_diagnose(lambda name, ok, detail: checks.append((name, ok, detail)))
    assert [c[0].split()[0] for c in checks] == ["pygpukit-llm", "tokenizers", "tqdm"]
    assert all(ok for _, ok, _ in checks)
