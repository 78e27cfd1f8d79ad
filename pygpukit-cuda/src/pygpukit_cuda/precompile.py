"""Building every built-in kernel for a GPU ahead of time, in parallel, into the disk cache.

Kernels are otherwise compiled one by one on first use; after this, a first use only loads
the cached CUBIN. ``python -m pygpukit_cuda precompile`` runs it.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import compiler
from .kernels import source
from .launcher import target_for


def precompile(device_index: int = 0, threads: int | None = None) -> dict[str, Any]:
    """Compile (or find cached) every built-in kernel for GPU `device_index`."""
    target = target_for(device_index)
    specs = list(source.all_kernels())
    before = compiler.stats()
    start = time.perf_counter()

    def build(spec: source.KernelSpec) -> None:
        compiler.compile_source(spec.source, spec.name, target)

    with ThreadPoolExecutor(max_workers=threads or os.cpu_count() or 4) as pool:
        list(pool.map(build, specs))
    after = compiler.stats()
    return {
        "target": target.option[6:],
        "kernels": len(specs),
        "compiled": after["compiled"] - before["compiled"],
        "from_cache": after["disk_hits"] - before["disk_hits"],
        "seconds": round(time.perf_counter() - start, 2),
    }
