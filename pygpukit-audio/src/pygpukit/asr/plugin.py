"""The `asr` plugin's hooks: `pygpukit.asr` as the `gp.asr` namespace, and doctor checks."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

from pygpukit import hookimpl

#: what Whisper needs beyond pygpukit-audio (the [whisper] extra), and what each is for
DEPENDENCIES = {
    "pygpukit.llm": ("pygpukit-llm", "transformer layers, safetensors"),
    "tokenizers": ("tokenizers", "tokenizer.json"),
    "tqdm": ("tqdm", "progress bars"),
}


@hookimpl
def pygpukit_register_namespaces(register: Callable[[str, object], None]) -> None:
    from pygpukit import asr

    register("asr", asr)


@hookimpl
def pygpukit_diagnose(report: Callable[[str, bool, str], None]) -> None:
    for module, (dist, purpose) in DEPENDENCIES.items():
        try:
            import_module(module)
            report(f"{dist} (whisper: {purpose})", True, version(dist))
        except (ImportError, PackageNotFoundError) as exc:
            report(f"{dist} (whisper: {purpose})", False,
                   f"{exc}; pip install pygpukit-audio[whisper]")  # fmt: skip
