"""What the NVRTC in use is (version, archs, path), remembered across processes.

Loading NVRTC costs milliseconds (the library is large), yet a kernel found in the disk
cache needs only NVRTC's version and supported archs to build its cache key. So the first
process that loads NVRTC writes those facts beside the kernel cache, fingerprinted by the
library file's size and modification time and by PYGPUKIT_NVRTC_PATH; later processes
read them and never load NVRTC unless something must really be compiled.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from . import cache
from ._loader import native, nvrtc


@dataclass(frozen=True)
class Facts:
    version: tuple[int, int]
    archs: tuple[int, ...]
    abi: int


_lock = threading.Lock()
_facts: Facts | None = None


def _facts_file() -> Path:
    return cache.cache_dir().parent / "nvrtc-facts.json"


def _fingerprint(lib: str) -> list[int] | None:
    try:
        st = os.stat(lib)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _read(abi: int) -> Facts | None:
    try:
        data = json.loads(_facts_file().read_text(encoding="utf-8"))
        if data["abi"] != abi or data["env"] != os.environ.get("PYGPUKIT_NVRTC_PATH", ""):
            return None
        if data["fingerprint"] is None or _fingerprint(data["lib"]) != data["fingerprint"]:
            return None
        return Facts(tuple(data["version"]), tuple(data["archs"]), abi)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing, stale or unreadable: ask NVRTC itself


def _write(facts: Facts, lib: str) -> None:
    path = _facts_file()
    record = {
        "abi": facts.abi,
        "env": os.environ.get("PYGPUKIT_NVRTC_PATH", ""),
        "lib": lib,
        "fingerprint": _fingerprint(lib),
        "version": list(facts.version),
        "archs": list(facts.archs),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, path)  # atomic: readers see the old file or the new one
    except OSError:
        pass  # a read-only cache folder only costs the next process an NVRTC load


def facts() -> Facts:
    """NVRTC's version and archs, from the facts file when it still describes NVRTC."""
    global _facts
    if _facts is not None:
        return _facts
    with _lock:
        if _facts is None:
            abi = int(native().ABI_VERSION)
            found = _read(abi)
            if found is None:
                mod = nvrtc()
                major, minor = mod.nvrtc_version()
                archs = tuple(sorted(int(a) for a in mod.nvrtc_supported_archs()))
                found = Facts((int(major), int(minor)), archs, abi)
                _write(found, str(mod.nvrtc_path()))
            _facts = found
    return _facts


def forget() -> None:
    """Drop the facts held in this process (tests; after changing NVRTC)."""
    global _facts
    with _lock:
        _facts = None
