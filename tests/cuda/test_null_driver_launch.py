"""The native launch path on the null CUDA driver (scripts/null_libcuda.c), no GPU needed:
eager launches of marked (programmatic) kernels go out plain without asking the driver
whether their stream captures, on the default stream and on a created one; launches inside
a graph capture go out programmatically; the capture count returns to zero.

Each check runs in a fresh interpreter whose PYGPUKIT_CUDA_DRIVER is the null driver,
built here with the system C compiler (skipped without one, or without NVRTC)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygpukit_cuda._native")

SOURCE = Path(__file__).resolve().parents[2] / "scripts" / "null_libcuda.c"


@pytest.fixture(scope="module")
def null_driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pygpukit_cuda import _loader

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the null driver")
    if not _loader.is_nvrtc_available():
        pytest.skip("NVRTC is needed to compile the kernels")
    out = tmp_path_factory.mktemp("nullcuda") / "libnullcuda.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(out), str(SOURCE)], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    return out


def run_on_null(args: list[str], driver: Path, tmp: Path) -> str:
    """stdout of a fresh interpreter run with `args` on the null driver (which must succeed)."""
    env = {**os.environ, "PYGPUKIT_CUDA_DRIVER": str(driver), "PYGPUKIT_CACHE_DIR": str(tmp)}
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                            timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def run_python(code: str, driver: Path, tmp: Path) -> dict[str, object]:
    out = run_on_null(["-c", textwrap.dedent(code)], driver, tmp)
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


PROBE = """
    import ctypes, json, os
    import numpy as np
    import pygpukit as gp
    from pygpukit_cuda import _loader, launcher

    lib = ctypes.CDLL(os.environ["PYGPUKIT_CUDA_DRIVER"])

    def counts():
        out = (ctypes.c_ulonglong * 3)()
        lib.null_counts(out)
        return list(out)  # launches, programmatic launches, capture queries

    def delta(before):
        return [b - a for a, b in zip(before, counts())]

    native = _loader.driver()
    x = gp.asarray(np.arange(1024, dtype=np.float32), device="cuda:0")
    x + 1.0, gp.add(x, x)  # compiled and loaded
    marked = [f.programmatic for f in launcher._loaded.values()]
    facts = {"marked": any(marked), "launch_ex": native.has_launch_ex(), "pdl": launcher.PDL}
    start = counts()
    for _ in range(10):
        x + 1.0, gp.add(x, x)
    facts["default"] = delta(start)
    lib.null_last_stream.restype = ctypes.c_ulonglong
    facts["default_handle"] = lib.null_last_stream()
    stream = gp.cuda.Stream(non_blocking=True)
    start = counts()
    with stream:
        for _ in range(10):
            x + 1.0, gp.add(x, x)
    facts["stream"] = delta(start)
    facts["stream_handle"] = [lib.null_last_stream(), stream.ptr]
    graph = gp.cuda.Graph()
    start = counts()
    with gp.cuda.graph(graph):
        facts["during"] = native.captures_in_progress()
        y = x
        for _ in range(6):
            y = y + 1.0
    facts["captured"] = delta(start)
    facts["after"] = native.captures_in_progress()
    start = counts()
    with stream:
        x + 1.0
    facts["eager_again"] = delta(start)
    print(json.dumps(facts))
"""


def test_eager_launches_stay_plain_and_captured_ones_go_programmatic(
    null_driver: Path, tmp_path: Path
) -> None:
    facts = run_python(PROBE, null_driver, tmp_path)
    if not (facts["marked"] and facts["launch_ex"] and facts["pdl"]):
        pytest.skip(f"no kernel marked programmatic here: {facts}")
    # 20 launches each way, none programmatic, and the driver never asked about capture
    assert facts["default"] == [20, 0, 0]
    assert facts["stream"] == [20, 0, 0]
    handle, ptr = facts["stream_handle"]  # type: ignore[misc]
    assert facts["default_handle"] == 0 and handle == ptr != 0
    assert facts["during"] == 1 and facts["after"] == 0
    launches, programmatic, queries = facts["captured"]  # type: ignore[misc]
    assert launches == programmatic == 6 and queries >= 6
    assert facts["eager_again"] == [1, 0, 0]


def test_launch_floor_probe_times_every_step(null_driver: Path, tmp_path: Path) -> None:
    """scripts/probe_launch_floor.py (the step-by-step host time of a one-element add that
    the benchmark notes quote) runs on the null driver and prints a time for every step, at
    each burst length asked for, the longer one also as the benchmark row times it."""
    script = SOURCE.parent / "probe_launch_floor.py"
    args = [str(script), "--rounds", "3", "--repeats", "1", "--calls", "8,100"]
    out = run_on_null(args, null_driver, tmp_path)
    blocks: dict[str, dict[str, float]] = {}
    for line in out.splitlines():
        if line.startswith("repeat"):
            header = line
            blocks[header] = {}
        else:
            name, us = line.rsplit(None, 1)
            blocks[header][name.strip()] = float(us)
    alone = "repeat 1: host time alone, us/call in bursts of"
    as_row = "repeat 1: as the benchmark row (sync timed), bursts of"
    assert list(blocks) == [f"{alone} 8", f"{alone} 100", f"{as_row} 100"]
    for steps in blocks.values():
        assert list(steps) == ["native launch (LaunchPlan)", "pool allocation and free",
                               "allocation + launch", "fast path (fresh)", "front door",
                               "gp.add"]  # fmt: skip
        assert all(us > 0 for us in steps.values())


FLOOR_PROBE = """
    import ctypes, gc, json, os
    import pygpukit as gp
    from pygpukit_cuda.launch_floor import bare_launch

    lib = ctypes.CDLL(os.environ["PYGPUKIT_CUDA_DRIVER"])
    lib.null_last_stream.restype = ctypes.c_ulonglong

    def launches():
        out = (ctypes.c_ulonglong * 3)()
        lib.null_counts(out)
        return out[0]

    facts = {}
    used = gp.memory.stats("cuda:0")["used"]
    stream = gp.cuda.Stream(non_blocking=True)
    on_default = bare_launch(0)
    with stream:
        on_stream = bare_launch(0)
    start = launches()
    for _ in range(5):
        on_default()
    facts["default"] = [launches() - start, lib.null_last_stream()]
    start = launches()
    for _ in range(3):
        on_stream()
    facts["stream"] = [launches() - start, lib.null_last_stream() == stream.ptr != 0]
    facts["held"] = gp.memory.stats("cuda:0")["used"] - used
    del on_default, on_stream
    gc.collect()
    gp.cuda.synchronize()
    facts["after"] = gp.memory.stats("cuda:0")["used"] - used
    print(json.dumps(facts))
"""


def test_bare_launch_is_one_launch_on_the_stream_it_was_made_on(
    null_driver: Path, tmp_path: Path
) -> None:
    """`launch_floor.bare_launch`, the floor the benchmark's tiny rows time: each call is
    exactly one launch, on the stream current when it was made; the array it writes lives
    as long as it does."""
    facts = run_python(FLOOR_PROBE, null_driver, tmp_path)
    assert facts["default"] == [5, 0]
    assert facts["stream"] == [3, True]
    assert facts["held"] > 0 and facts["after"] == 0
