"""The CUDA plugin uses only what a third party's plugin can: no private pygpukit module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parents[2] / "pygpukit-cuda" / "src" / "pygpukit_cuda"


def _private_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            names = [a.name for a in node.names] if parts == ["pygpukit"] else []
            if parts[0] == "pygpukit" and (
                any(p.startswith("_") for p in parts) or any(n.startswith("_") for n in names)
            ):
                found.append(f"{path.name}:{node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "pygpukit" and any(p.startswith("_") for p in parts):
                    found.append(f"{path.name}:{node.lineno}: import {alias.name}")
    return found


@pytest.mark.parametrize("path", sorted(SOURCES.rglob("*.py")), ids=lambda p: p.name)
def test_no_private_core_module_is_imported(path: Path) -> None:
    assert _private_imports(path) == []
