"""The `llm` plugin's hooks: `pygpukit.llm` as the `gp.llm` namespace, and doctor checks."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

from pygpukit import hookimpl

#: what text generation needs beyond pygpukit-core, and what each one is for
DEPENDENCIES = {
    "tokenizers": "tokenizer.json",
    "jinja2": "chat templates",
    "tqdm": "loading progress",
}


@hookimpl
def pygpukit_register_namespaces(register: Callable[[str, object], None]) -> None:
    from pygpukit import llm

    register("llm", llm)


@hookimpl
def pygpukit_diagnose(report: Callable[[str, bool, str], None]) -> None:
    for module, purpose in DEPENDENCIES.items():
        try:
            import_module(module)
            report(f"{module} ({purpose})", True, version(module))
        except (ImportError, PackageNotFoundError) as exc:
            report(f"{module} ({purpose})", False, f"{exc}; pip install {module}")
