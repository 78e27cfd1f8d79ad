"""NVIDIA libraries opened at run time (cuBLASLt, cuSOLVER, cuFFT): the places to look and
the first one that opens, described in one status line. Each library's module keeps its own
`library()` and status; this is only the search they share."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def candidates(env_var: str, file_glob: str, found: str | None) -> list[str]:
    """Paths to open, in order: what `env_var` names (a file, or a folder searched with
    `file_glob`), then `found` (cuda-pathfinder's answer, when it has one)."""
    out: list[str] = []
    env = os.environ.get(env_var)
    if env:
        p = Path(env)
        out += sorted(str(f) for f in p.glob(file_glob)) if p.is_dir() else [env]
    if found:
        out.append(found)
    return out


def pathfinder_path(name: str) -> str | None:
    """Where cuda-pathfinder finds library `name` (wheels first, then the system, loading its
    dependencies), or None."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
    except ImportError:
        return None
    try:
        return str(load_nvidia_dynamic_lib(name).abs_path)
    except Exception:  # DynamicLibNotFoundError and friends: simply not installed
        return None


def open_first(paths: list[str], make: Callable[[str], Any],
               describe: Callable[[Any], str]) -> tuple[Any, list[str]]:  # fmt: skip
    """(the first library `make` opens and `describe`s, or None; each failure's message)."""
    errors = []
    for path in paths:
        try:
            lib = make(path)
            return lib, [describe(lib)]
        except RuntimeError as exc:
            errors.append(str(exc))
    return None, errors


def tried(errors: list[str]) -> str:
    """The last few failures, for a not-found message."""
    return "; ".join(errors[-3:]) if errors else "cuda-pathfinder found none"
