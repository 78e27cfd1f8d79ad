"""The `audio` plugin's hooks: `pygpukit.audio` as the `gp.audio` namespace, and doctor checks."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

from pygpukit import hookimpl

#: optional helpers and what each one adds
OPTIONAL = {"soundfile": "FLAC/OGG/float WAV files (PCM WAV works without it)"}


@hookimpl
def pygpukit_register_namespaces(register: Callable[[str, object], None]) -> None:
    from pygpukit import audio

    register("audio", audio)


@hookimpl
def pygpukit_diagnose(report: Callable[[str, bool, str], None]) -> None:
    for module, purpose in OPTIONAL.items():
        try:
            import_module(module)
            report(f"{module} ({purpose})", True, version(module))
        except (ImportError, PackageNotFoundError) as exc:
            report(f"{module} ({purpose})", True, f"optional, not installed ({exc})")
