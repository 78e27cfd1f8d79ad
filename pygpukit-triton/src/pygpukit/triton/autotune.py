"""Autotuning: time each candidate launch configuration once per (kernel, problem key,
candidate list, GPU, Triton version) and keep the winner on disk, in
``<cache_dir>/triton/autotune.json`` (the ``cache_dir`` setting, PYGPUKIT_CACHE_DIR), so
later processes start tuned.

While the current stream captures a CUDA graph nothing can be timed: the first candidate
runs and nothing is stored. Under the interpreter the first candidate is taken too.

How a choice is timed, and why: the H100 measured float16 causal attention at head_dim 64
4x slower than bfloat16 (16 heads x 2048) although both compile to the same code (same
registers, shared memory and HGMMA count for every candidate); what differs is the tuned
choice. That choice came from five launches (~0.2 ms) right after each candidate's own
compile, seconds of idle GPU whose clocks were still ramping: a coin toss, kept on disk
for good. So every candidate is compiled and launched first, the GPU is kept busy a
while, and then the candidates are timed in interleaved rounds of windows of at least
WINDOW_MS, each keeping its fastest round; each entry keeps every candidate's time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pygpukit import config

from . import availability

_lock = threading.Lock()
#: the disk table: full key -> {"pick": index, "config": repr, "ms": per-candidate times}
_memory: dict[str, dict[str, Any]] = {}
_loaded_from: Path | None = None
#: (name, key, device index) -> the chosen candidate: the per-launch lookup, no hashing
_chosen: dict[tuple[str, str, int], Any] = {}
#: interleaved timing rounds; each candidate keeps its fastest
ROUNDS = 3
#: a timed window lasts at least this long (event resolution and launch jitter stay small)
WINDOW_MS = 1.0
#: launches per window, at most (a candidate of a few microseconds still fills a window)
MAX_COUNT = 200
#: the GPU is kept busy this long before the first timed round (clocks up after compiles)
WARM_MS = 20.0


def cache_file() -> Path:
    root = config.current().get("cache_dir") or str(Path.home() / ".cache" / "pygpukit")
    return Path(root) / "triton" / "autotune.json"


def fingerprint(candidates: Sequence[Any]) -> str:
    """A short digest of the candidate list, part of every stored key: a stored index then
    always means the list it was chosen from (a reordered or pruned list tunes again)."""
    return hashlib.sha1(repr(list(candidates)).encode()).hexdigest()[:10]


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
        _memory.update({k: v for k, v in data.items()
                        if isinstance(v, dict) and isinstance(v.get("pick"), int)})  # fmt: skip


def _store(path: Path) -> None:
    """Write the table atomically (another process may be reading it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(_memory, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs tuning again next time


def choose(name: str, key: str, device_index: int, candidates: Sequence[Any],
           launch: Callable[[Any], None]) -> Any:  # fmt: skip
    """The best of `candidates` for this problem; `launch(c)` runs the kernel with c."""
    if len(candidates) == 1 or availability.interpret():
        return candidates[0]
    hit = _chosen.get((name, key, device_index), _chosen)
    if hit is not _chosen:
        return hit
    from pygpukit_cuda import cubin

    full = (f"{name}|{key}|{fingerprint(candidates)}|{_device_name(device_index)}|"
            f"{availability.status()[1]}")  # fmt: skip
    path = cache_file()
    with _lock:
        _load(path)
        found = _memory.get(full)
    if found is not None and 0 <= found["pick"] < len(candidates):
        pick = candidates[found["pick"]]
        _chosen[(name, key, device_index)] = pick
        return pick
    if cubin.is_capturing(device_index):
        return candidates[0]
    best, times = tune(candidates, launch)
    with _lock:
        _memory[full] = {"pick": best, "config": repr(candidates[best]),
                         "ms": [None if math.isinf(t) else round(t, 5) for t in times]}  # fmt: skip
        _chosen[(name, key, device_index)] = candidates[best]
        _store(path)
    return candidates[best]


def settled(name: str, key: str, device_index: int) -> bool:
    """Whether `choose` has a lasting answer for this problem (not the first candidate
    handed out while a graph was being captured)."""
    return (name, key, device_index) in _chosen


def tune(candidates: Sequence[Any], launch: Callable[[Any], None]) -> tuple[int, list[float]]:
    """(index of the fastest candidate, milliseconds per launch of each; inf: it failed)."""
    times = [math.inf] * len(candidates)
    runs: dict[int, Callable[[], None]] = {}
    for i, c in enumerate(candidates):  # compile and load everything before timing anything
        run: Callable[[], None] = functools.partial(launch, c)
        try:
            run()
        except Exception:  # a configuration this GPU cannot run (shared memory, registers)
            continue
        runs[i] = run
    if not runs:
        return 0, times
    counts: dict[int, int] = {}
    for i, run in list(runs.items()):  # one short window each: how many fill WINDOW_MS
        try:
            ms = _time(run, 3) / 3
        except Exception:
            del runs[i]
            continue
        counts[i] = max(3, min(MAX_COUNT, math.ceil(WINDOW_MS / max(ms, 1e-4))))
    if not runs:
        return 0, times
    first = next(iter(runs))
    busy = 0.0
    while busy < WARM_MS:  # clocks up: compiles left the GPU idle for seconds
        busy += _time(runs[first], counts[first]) or WARM_MS
    for _ in range(ROUNDS):  # interleaved: a slow moment of the GPU hits every candidate
        for i, run in list(runs.items()):
            try:
                times[i] = min(times[i], _time(run, counts[i]) / counts[i])
            except Exception:
                del runs[i]
                times[i] = math.inf
    if not runs:
        return 0, times
    best = min(runs, key=lambda i: times[i])
    return best, times


def _time(run: Callable[[], None], count: int) -> float:
    """Milliseconds on the GPU for `count` back-to-back launches of `run`."""
    import pygpukit as gp

    start, end = gp.cuda.Event(), gp.cuda.Event()
    start.record()
    for _ in range(count):
        run()
    end.record()
    end.synchronize()
    return float(gp.cuda.get_elapsed_time(start, end))


def table() -> dict[str, dict[str, Any]]:
    """Every stored choice (full key -> pick, its configuration, each candidate's ms): what
    ran, for a benchmark row that looks wrong."""
    path = cache_file()
    with _lock:
        _load(path)
        return dict(_memory)


@functools.cache
def _device_name(index: int) -> str:
    try:
        import pygpukit as gp

        return str(gp.get_device_info(f"cuda:{index}").get("name", f"cuda:{index}"))
    except Exception:
        return f"cuda:{index}"
