"""Compiling CUDA C with NVRTC: CUBIN for the device's exact arch, PTX only as a fallback.

`compile_source` is the one entry point. Results are cached on disk (see `cache`) by source,
options, target, NVRTC version and our ABI version; compile errors raise `CompileError`
with NVRTC's log and the offending source lines.
"""

from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass

import _pygpukit_rust as _rust
from pygpukit.jit.compiler import NvrtcError

from . import cache, nvrtc_facts
from ._loader import nvrtc

#: Options every compile gets (kernels here are written for these).
BASE_OPTIONS = ("-std=c++17", "-default-device")


class CompileError(NvrtcError):
    """NVRTC rejected the source; `log` is NVRTC's log (``gp.NvrtcError``, the seed's name,
    catches it; it is a RuntimeError)."""

    def __init__(self, message: str, log: str) -> None:
        super().__init__(message)
        self.log = log

    @property
    def compilation_log(self) -> str:
        """The seed's name for `log`."""
        return self.log


@dataclass(frozen=True)
class Target:
    """What to compile for: CUBIN for `arch` (e.g. 90), or PTX for a virtual arch."""

    arch: int
    cubin: bool

    @property
    def option(self) -> str:
        return f"-arch={'sm' if self.cubin else 'compute'}_{self.arch}"


@dataclass(frozen=True)
class Image:
    data: bytes
    target: Target
    from_cache: bool


_stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0}
#: compiled images in memory: the Rust runtime's LRU kernel-module cache (dispatch controller),
#: keyed like the disk cache, in front of it
_images = _rust.KernelCache(capacity_bytes=256 << 20, max_entries=8192)
_stats_lock = threading.Lock()


def stats() -> dict[str, int]:
    """How many compiles ran and how many were served from the disk cache (this process)."""
    with _stats_lock:
        return dict(_stats)


def choose_target(arch: int, driver_version: int) -> Target:
    """CUBIN for `arch` when NVRTC knows it; else PTX for the newest arch below it, but only
    from an NVRTC no newer than the driver (a driver rejects PTX newer than itself)."""
    known = nvrtc_facts.facts()
    supported = list(known.archs)
    if arch in supported:
        return Target(arch, cubin=True)
    major, minor = known.version
    older = [a for a in supported if a <= arch]
    if older and major * 1000 + minor * 10 <= driver_version:
        return Target(older[-1], cubin=False)
    raise CompileError(
        f"NVRTC {major}.{minor} cannot build for sm_{arch} (it supports "
        f"{', '.join(f'sm_{a}' for a in supported)}), and its PTX would be "
        f"{'too new for the driver' if older else 'for an older GPU only'}; "
        "install an nvidia-cuda-nvrtc wheel matching your driver",
        "",
    )


def compile_source(
    source: str, name: str, target: Target, options: tuple[str, ...] = (), use_cache: bool = True
) -> Image:
    """The CUBIN (or PTX) of `source`, from the memory or disk cache when possible (NVRTC
    itself is loaded only when something must be compiled)."""
    known = nvrtc_facts.facts()
    opts = (*BASE_OPTIONS, target.option, *options)
    version = ".".join(str(v) for v in known.version)
    key = cache.make_key(
        source, "\0".join(opts), target.option, "cubin" if target.cubin else "ptx",
        version, known.abi,
    )  # fmt: skip
    # the cache folder is part of the key: a fresh folder means a fresh cache, in memory too
    memory_key = (
        _rust.KernelCache.hash_source(source),
        "\0".join((*opts, str(cache.cache_dir()))),
        target.option,
        version,
    )
    if use_cache:
        found = _images.get(*memory_key)
        if found is not None:
            with _stats_lock:
                _stats["memory_hits"] += 1
            return Image(bytes(found[0]), target, from_cache=True)
        hit = cache.load(key)
        if hit is not None:
            with _stats_lock:
                _stats["disk_hits"] += 1
            _remember(memory_key, hit)
            return Image(hit, target, from_cache=True)
    ok, image, log = nvrtc().compile(source, f"{name}.cu", list(opts), target.cubin)
    if not ok:
        raise CompileError(describe_failure(source, name, target, log), log)
    with _stats_lock:
        _stats["compiled"] += 1
    if use_cache:
        cache.store(key, image)
        _remember(memory_key, image)
    return Image(image, target, from_cache=False)


def _remember(memory_key: tuple[str, str, str, str], image: bytes) -> None:
    source_hash, options, arch, version = memory_key
    with contextlib.suppress(ValueError):  # an image bigger than the whole cache stays out
        _images.put(source_hash, image, options=options, arch=arch, compiler_version=version)


def clear_memory_cache() -> None:
    """Forget the compiled images held in memory (the disk cache stays)."""
    _images.clear()


def memory_cache_stats() -> dict[str, object]:
    """The in-memory module cache's counters (hits, misses, evictions, bytes)."""
    return dict(_images.stats())


_LINE = re.compile(r"^[^\s(]*\((\d+)\): (error|catastrophic error)", re.MULTILINE)


def describe_failure(source: str, name: str, target: Target, log: str) -> str:
    """NVRTC's log followed by each source line an error points at."""
    lines = source.splitlines()
    quoted = []
    for number in dict.fromkeys(int(m.group(1)) for m in _LINE.finditer(log)):
        if 1 <= number <= len(lines):
            quoted.append(f"  line {number}: {lines[number - 1].strip()}")
    text = f"NVRTC could not compile {name!r} for {target.option[6:]}:\n{log.strip()}"
    if quoted:
        text += "\noffending source line(s):\n" + "\n".join(quoted)
    return text
