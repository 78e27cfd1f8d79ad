"""Whether the qos request's rare slow requests are the host CPU's: the request alone and
beside the hog under gp.Scheduler in turns, each request timed with a fixed integer loop
just before and after it, its CPU time, run-queue wait and context switches
(scripts/cpu_stall_watch.c, built here with the C compiler); `--sample-ms` also records
every thread's native stack while a request runs past that many milliseconds.

    python scripts/probe_cpu_stalls.py [--seconds 200] [--sample-ms 1.5]

On the H100 (2026-11-25, 16 KVM vCPUs; `--seconds 60 --sample-ms 1.5`, 61 turns) it
settled what scripts/probe_qos_tail.py left open:
- alone, 94% of the slow requests (over 3x the solo median) had the loop run over twice its
  median, and they stayed on their CPU (99% of their wall time; no switch, no run-queue
  wait). 3.0% of all requests had such a slow CPU; 38% of those were slow, 0.08% of the rest;
- beside the hog, 59% of the slow requests had a slow CPU, and 0.86% of the rest were slow.
  A quarter of the request's stalled samples were waiting for the GIL in the eval loop,
  after a forced switch to the hog's thread (the sampler's own signals add to that);
- 10 of the 61 turns read a shared p99 at 3x its own solo p99 or more.
An earlier form of this probe (the issue part only, no sampler) agreed. In 215 turns each,
3.8% of the requests alone and 2.7% beside the hog had a slow CPU: the hog does not cause
it. In 340 runs beside the hog, 78% of the slow requests had one, 94% never left their CPU.
So the host's CPU runs 3-10x slower for tens of milliseconds at a time (up to 23 requests
in a row), unseen by the guest's steal time, alone or not.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit.benchmark import qos_workload as W

ROLES = ("main", "request", "hog")
REGION_FIELDS = ("t", "wall", "cpu", "runq", "voluntary", "involuntary", "calib_before",
                 "calib_after", "cpu_in", "cpu_out")  # fmt: skip


class Region(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in REGION_FIELDS]


class Sample(ctypes.Structure):
    _fields_ = [("t", ctypes.c_int64), ("region_start", ctypes.c_int64), ("role", ctypes.c_int32),
                ("depth", ctypes.c_int32), ("pc", ctypes.c_void_p * 32)]  # fmt: skip


_LIBC = ctypes.CDLL(None)  # for dladdr


class DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]  # fmt: skip


def load_watch() -> Any:
    """Build and load cpu_stall_watch.c. PyDLL, not CDLL: its calls keep the GIL, so marking
    a region does not hand the GIL to another thread."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("this probe needs a C compiler (cc or gcc) for cpu_stall_watch.c")
    so = Path(tempfile.mkdtemp()) / "cpu_stall_watch.so"
    source = Path(__file__).resolve().parent / "cpu_stall_watch.c"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(so), str(source), "-lpthread"],
                   check=True)  # fmt: skip
    watch = ctypes.PyDLL(str(so))
    watch.cw_region.restype = ctypes.POINTER(Region)
    watch.cw_sample.restype = ctypes.POINTER(Sample)
    watch.cw_sample_start.argtypes = [ctypes.c_int64, ctypes.c_int64]
    return watch


def instrument(lib: W.Library, watch: Any) -> None:
    """Each request becomes a region on the thread that runs it (role "request"); the
    thread running the hog takes role "hog"."""
    request, hog_step = lib.request, lib.hog_step

    def timed_request() -> None:
        watch.cw_role(1)
        watch.cw_enter()
        try:
            request()
        finally:
            watch.cw_leave()

    def hog() -> None:
        watch.cw_role(2)
        hog_step()

    lib.request, lib.hog_step = timed_request, hog


def regions_since(watch: Any, first: int) -> dict[str, np.ndarray]:
    rows = [watch.cw_region(i).contents for i in range(first, watch.cw_region_count())]
    return {k: np.array([getattr(r, k) for r in rows], dtype=np.float64) for k in REGION_FIELDS}


def join(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {k: np.concatenate([p[k] for p in parts]) for k in REGION_FIELDS}


def report(name: str, r: dict[str, np.ndarray], slow_us: float, calib_median: float) -> None:
    wall = r["wall"] / 1e3
    slow = wall > slow_us
    slow_cpu = np.maximum(r["calib_before"], r["calib_after"]) > 2 * calib_median

    def pct(mask: np.ndarray, among: np.ndarray) -> float:
        return float(mask[among].mean() * 100) if among.any() else float("nan")

    p50, p99 = np.median(wall), np.percentile(wall, 99)
    print(f"{name}: {len(wall)} requests, p50 {p50:.0f} us, p99 {p99:.0f} us; slow (over "
          f"{slow_us:.0f} us) {slow.mean() * 100:.2f}%; slow CPU (loop over twice its median) "
          f"{slow_cpu.mean() * 100:.2f}%")  # fmt: skip
    print(f"  slow requests with a slow CPU {pct(slow_cpu, slow):.0f}%; slow among slow-CPU "
          f"requests {pct(slow, slow_cpu):.1f}%, among the rest "
          f"{pct(slow, ~slow_cpu):.2f}%")  # fmt: skip
    if slow.any():
        share = r["cpu"][slow].sum() / r["wall"][slow].sum() * 100
        moved = (r["cpu_in"] != r["cpu_out"])[slow].mean()
        runq = r["runq"][slow]
        waited = "not reported" if (runq < 0).any() else f"max {runq.max() / 1e3:.0f} us"
        print(f"  slow requests: run-queue wait {waited}, "
              f"involuntary switches {int(r['involuntary'][slow].sum())}, none voluntary in "
              f"{(r['voluntary'][slow] == 0).mean() * 100:.0f}%, CPU time {share:.0f}% of "
              f"their wall time, moved CPU in {moved:.0%}")  # fmt: skip
    runs: collections.Counter[int] = collections.Counter()
    n = 0
    for s in [*slow_cpu, False]:  # the False ends a run still open at the end
        if s:
            n += 1
        elif n:
            runs[n], n = runs[n] + 1, 0
    print(f"  slow-CPU requests in a row (length: times): {dict(sorted(runs.items()))}")


def symbol(pc: int, cache: dict[int, str]) -> str:
    if pc not in cache:
        info = DlInfo()
        if not _LIBC.dladdr(ctypes.c_void_p(pc), ctypes.byref(info)):
            cache[pc] = "?"
        else:
            lib = os.path.basename((info.fname or b"?").decode())
            name = (info.sname or b"").decode()
            cache[pc] = f"{lib}:{name}" if name else f"{lib}+{pc - (info.fbase or 0):#x}"
    return cache[pc]


def what(frames: list[str]) -> str:
    """What a sampled thread was doing, from its innermost frames."""
    top = " ".join(frames[:8])
    if "nanosleep" in " ".join(frames[:2]):
        return "sleeping"
    if "PyEval_RestoreThread" in top or (
        "pthread_cond_timedwait" in " ".join(frames[:4]) and "python" in " ".join(frames[3:6])
    ):
        return "waiting for the GIL"
    for key, label in (("libcuda", "in the CUDA driver"), ("libcublasLt", "in cuBLASLt"),
                       ("parking_lot", "waiting in the Rust runtime")):  # fmt: skip
        if key in top:
            return label
    return "running Python" if "python" in top else "elsewhere"


def report_samples(watch: Any) -> None:
    cache: dict[int, str] = {}
    kinds: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    stacks: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for i in range(watch.cw_sample_count()):
        s = watch.cw_sample(i).contents
        role = ROLES[s.role] if 0 <= s.role < len(ROLES) else "other"
        frames = [symbol(s.pc[k], cache) for k in range(2, s.depth)]  # past the handler
        kinds[role][what(frames)] += 1
        stacks[role][" < ".join(frames[:6])] += 1
    print(f"\nsamples while a request ran past the threshold: {watch.cw_sample_count()}")
    for role, counts in kinds.items():
        print(f"  {role}: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
        for stack, n in stacks[role].most_common(3):
            print(f"    {n:5d}  {stack}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=200.0, help="how long to take turns")
    ap.add_argument("--requests", type=int, default=150, help="measured requests per run")
    sample_help = "sample every thread's stack while a request runs past this (0: off)"
    ap.add_argument("--sample-ms", type=float, default=0.0, help=sample_help)
    args = ap.parse_args()
    device = gp.Device.parse("cuda:0")
    watch = load_watch()
    lib = W.pygpukit_library(device)
    instrument(lib, watch)
    watch.cw_role(0)
    if args.sample_ms > 0 and watch.cw_sample_start(int(args.sample_ms * 1e6), 300_000) != 0:
        raise SystemExit("could not start the stack sampler")
    solo: list[dict[str, np.ndarray]] = []
    shared: list[dict[str, np.ndarray]] = []
    pairs: list[tuple[float, float]] = []
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        first = watch.cw_region_count()
        with lib.stream("plain"):
            W.requests(lib, args.requests)
        watch.cw_role(0)  # the main thread ran the solo requests as "request"
        solo.append(regions_since(watch, first + W.WARMUP))
        first = watch.cw_region_count()
        W.under_scheduler(lib, device, args.requests)
        shared.append(regions_since(watch, first + W.WARMUP))
        pairs.append(tuple(float(np.percentile(r["wall"], 99)) for r in (solo[-1], shared[-1])))
    watch.cw_sample_stop()
    alone, beside = join(solo), join(shared)
    calib_median = float(np.median(np.concatenate([alone["calib_before"], beside["calib_before"]])))
    slow_us = 3 * float(np.median(alone["wall"])) / 1e3
    print(f"{len(pairs)} turns; calibration loop median {calib_median / 1e3:.1f} us")
    print(f"turns whose shared p99 is 3x their solo p99 or more: "
          f"{sum(b >= 3 * a for a, b in pairs)} of {len(pairs)}")  # fmt: skip
    report("alone", alone, slow_us, calib_median)
    report("beside the hog under gp.Scheduler", beside, slow_us, calib_median)
    if args.sample_ms > 0:
        report_samples(watch)


if __name__ == "__main__":
    main()
