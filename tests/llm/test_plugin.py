"""pygpukit-llm registers as a plugin: the `gp.llm` namespace and its doctor checks."""

from __future__ import annotations

import pygpukit as gp
import pygpukit.llm
from pygpukit.llm import plugin


def test_namespace_is_the_package() -> None:
    info = gp.plugins.get("llm")
    assert info.namespaces == ["llm"]
    assert gp.llm is pygpukit.llm
    assert gp.llm.load_model_from_safetensors is pygpukit.llm.load_model_from_safetensors


def test_doctor_checks_the_text_dependencies() -> None:
    checks: list[tuple[str, bool, str]] = []
    plugin.pygpukit_diagnose(lambda name, ok, detail: checks.append((name, ok, detail)))
    assert [c[0].split()[0] for c in checks] == ["tokenizers", "jinja2", "tqdm"]
    assert all(ok for _, ok, _ in checks)
