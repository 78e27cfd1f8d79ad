"""Autotuning: time each candidate launch configuration once per (kernel, problem key, GPU,
Triton version) and keep the winner on disk, in ``<cache_dir>/triton/autotune.json``
(the ``cache_dir`` setting, PYGPUKIT_CACHE_DIR), so later processes start tuned.

While the current stream captures a CUDA graph nothing can be timed: the first candidate
runs and nothing is stored. Under the interpreter the first candidate is taken too.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pygpukit import config

from . import availability

_lock = threading.Lock()
_memory: dict[str, int] = {}
_loaded_from: Path | None = None
#: (name, key, device index) -> chosen index: the per-launch lookup, no string building
_chosen: dict[tuple[str, str, int], int] = {}
#: timed launches per candidate (after one untimed warm-up, which also compiles)
REPEATS = 5


def cache_file() -> Path:
    root = config.current().get("cache_dir") or str(Path.home() / ".cache" / "pygpukit")
    return Path(root) / "triton" / "autotune.json"


def _load(path: Path) -> None:
    global _loaded_from
    if _loaded_from == path:
        return
    _loaded_from = path
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return  # absent or damaged: tune again (a damaged file is rewritten whole)
    if isinstance(data, dict):
        _memory.update({k: v for k, v in data.items() if isinstance(v, int)})


def _store(path: Path) -> None:
    """Write the table atomically (another process may be reading it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(_memory, f, indent=0, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs tuning again next time


def choose(name: str, key: str, device_index: int, candidates: Sequence[Any],
           launch: Callable[[Any], None]) -> Any:  # fmt: skip
    """The best of `candidates` for this problem; `launch(c)` runs the kernel with c."""
    if len(candidates) == 1 or availability.interpret():
        return candidates[0]
    hit = _chosen.get((name, key, device_index))
    if hit is not None:
        return candidates[hit]
    from pygpukit_cuda import cubin

    full = f"{name}|{key}|{_device_name(device_index)}|{availability.status()[1]}"
    path = cache_file()
    with _lock:
        _load(path)
        found = _memory.get(full)
    if found is not None and 0 <= found < len(candidates):
        _chosen[(name, key, device_index)] = found
        return candidates[found]
    if cubin.is_capturing(device_index):
        return candidates[0]
    best, best_ms = 0, float("inf")
    for i, c in enumerate(candidates):
        try:
            ms = _time(functools.partial(launch, c))
        except Exception:  # a configuration this GPU cannot run (shared memory, registers)
            continue
        if ms < best_ms:
            best, best_ms = i, ms
    with _lock:
        _memory[full] = best
        _chosen[(name, key, device_index)] = best
        _store(path)
    return candidates[best]


def _time(run: Callable[[], None]) -> float:
    import pygpukit as gp

    run()  # compile and warm up
    start, end = gp.cuda.Event(), gp.cuda.Event()
    start.record()
    for _ in range(REPEATS):
        run()
    end.record()
    end.synchronize()
    return float(gp.cuda.get_elapsed_time(start, end))


@functools.cache
def _device_name(index: int) -> str:
    try:
        import pygpukit as gp

        return str(gp.get_device_info(f"cuda:{index}").get("name", f"cuda:{index}"))
    except Exception:
        return f"cuda:{index}"
