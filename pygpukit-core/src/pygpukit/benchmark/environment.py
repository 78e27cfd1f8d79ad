"""Where a run happened: the device, its driver, library versions, time and commit."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from .peers import Peer, cupy_version, distribution_version


def _commit() -> str | None:
    """The git commit of the pygpukit sources, when they sit in a checkout."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True,
            text=True, timeout=5, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def host_load() -> dict[str, Any]:
    """The host's CPU count and load averages when the run starts. Tiny-op rows measure the
    host as much as the library: on the lent H100 the slowest runs, for every library, came
    right after a test round, so a reader needs to know what the host was doing."""
    load: dict[str, Any] = {"cpus": os.cpu_count()}
    try:
        one, five, _ = os.getloadavg()
    except (AttributeError, OSError):  # not on every platform (Windows has none)
        return load
    load.update(load_1m=round(one, 2), load_5m=round(five, 2))
    return load


def collect(device: Any, peers: list[Peer]) -> dict[str, Any]:
    import pygpukit as gp

    from .._placement import backend_of

    try:
        info = dict(backend_of(device).info(device))
    except Exception as exc:  # the report still says where it ran
        info = {"type": device.type, "error": f"{type(exc).__name__}: {exc}"}
    versions: dict[str, str | None] = {
        "pygpukit": gp.__version__,
        "pygpukit-cuda": distribution_version("pygpukit-cuda"),
        "nvidia-cufft": distribution_version("nvidia-cufft"),  # what gp.fft runs on, on cuda
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    for p in peers:
        if p.name != "numpy":
            versions[p.name] = p.version() if p.xp is not None else None
    versions.setdefault("torch", distribution_version("torch"))
    versions.setdefault("cupy", cupy_version())
    return {
        "device": {k: v for k, v in info.items() if isinstance(v, (str, int, float, bool))},
        "device_str": str(device),
        "device_name": info.get("name", str(device)),
        "versions": versions,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "host": host_load(),
        "timestamp": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
    }
