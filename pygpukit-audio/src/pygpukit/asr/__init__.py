"""pygpukit.asr: speech recognition on pygpukit ops (Whisper, in pygpukit.asr.whisper)."""

from __future__ import annotations

from typing import Any

__all__ = ["whisper"]


def __getattr__(name: str) -> Any:
    # `gp.asr.whisper` imports the model code (and pygpukit.llm) on first use only
    if name == "whisper":
        from importlib import import_module

        return import_module(".whisper", __name__)
    raise AttributeError(f"module 'pygpukit.asr' has no attribute {name!r}")
