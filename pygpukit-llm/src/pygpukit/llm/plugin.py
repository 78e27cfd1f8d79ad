"""The `llm` plugin's hook: `pygpukit.llm` answers as the `gp.llm` namespace."""

from __future__ import annotations

from collections.abc import Callable

from pygpukit import hookimpl


@hookimpl
def pygpukit_register_namespaces(register: Callable[[str, object], None]) -> None:
    from pygpukit import llm

    register("llm", llm)
