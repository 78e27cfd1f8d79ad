"""The cases that are not one array op: host overhead of tiny ops, and kernel compile times.

Tiny ops: many back-to-back ``add`` calls on 1-element arrays, timed on the host clock with
one synchronize at the end, so the number is what the library costs per call.

Compile: a cold NVRTC compile through ``gp.jit`` (a fresh cache folder and a source no
cache has seen), and a cached kernel's first launch in a new process, which must come
from the disk cache (the child process reports the compiler's counters to prove it).
CuPy's ``RawKernel`` is timed the same way where CuPy is present.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .cases import SpecialCase
from .peers import Peer
from .results import ERROR, FAIL, MISSING, PASS, PeerResult, Row
from .runner import Bench, _join, _short
from .timing import ISSUE_CALLS, Stats, issue_us, per_call_interleaved

# -- tiny ops ---------------------------------------------------------------------------


def run_tiny(case: SpecialCase, bench: Bench) -> Row:
    """Ours and every peer timed in turn, sample by sample (see `per_call_interleaved`)."""
    calls = int(case.params["calls"])
    row = Row(case.family, case.op, case.case, unit="us/call", tol=0.0)
    timed: list[tuple[Row | PeerResult, Callable[[], Any], Callable[[], None]]] = []
    try:
        fn = _tiny_ours(row, bench, case.params.get("backend"))
        if fn is not None:
            timed.append((row, fn, bench.sync))
    except Exception as exc:  # report, don't crash
        row.status, row.note = ERROR, f"{type(exc).__name__}: {_short(exc)}"
    for peer in bench.peers:
        result = PeerResult(peer.name)
        row.peers.append(result)
        add = _tiny_peer(peer, result)
        if add is not None:
            timed.append((result, add, peer.sync))
    try:
        if timed:  # nothing to time where ours failed its check and no peer is loaded
            stats = per_call_interleaved([(fn, sync) for _, fn, sync in timed], calls,
                                         warmup=bench.warmup, repeats=bench.repeats,
                                         budget_s=bench.budget_s)  # fmt: skip
            for (who, _, _), got in zip(timed, stats, strict=True):
                who.stats = got
            if timed[0][0] is row:
                row.status = PASS
            note_issue_time(row, timed, launch_floor(row, bench, bench.sync))
    except Exception as exc:
        row.status = ERROR
        row.note = _join(row.note, f"timing: {type(exc).__name__}: {_short(exc)}")
    finally:
        timed.clear()  # the arrays go before the caches are emptied
        bench.release()
    _ratios(row)
    return row


def _tiny_ours(row: Row, bench: Bench, backend: str | None = None) -> Callable[[], Any] | None:
    """`gp.add` of two 1-element arrays (through `backend` when given), once checked (None:
    a missing or FAIL row)."""
    import pygpukit as gp

    a = gp.asarray(np.array([1.5], dtype=np.float32), device=bench.device)
    b = gp.asarray(np.array([2.25], dtype=np.float32), device=bench.device)
    expl = gp.explain("add", a, b, backend=backend)
    if expl.chosen is None:
        row.status, row.note = MISSING, f"no provider has add on {bench.device}"
        return None
    row.provider = expl.chosen
    got = gp.add(a, b, backend=backend).to_numpy()
    if got.shape != (1,) or float(got[0]) != 3.75:
        row.status, row.error = FAIL, float("inf")
        row.note = f"wrong result, not timed: {got!r}, want [3.75]"
        return None
    row.error = 0.0
    if backend is None:
        return lambda: gp.add(a, b)
    return lambda: gp.add(a, b, backend=backend)


def _tiny_peer(peer: Peer, result: PeerResult) -> Callable[[], Any] | None:
    """The peer's add of two 1-element arrays, once checked (None: not loaded or failed)."""
    if not peer.load():
        result.note = peer.note
        return None
    try:
        a = peer.put(np.array([1.5], dtype=np.float32), "float32")
        b = peer.put(np.array([2.25], dtype=np.float32), "float32")
        add = peer.xp.add
        result.error = 0.0 if float(peer.get(add(a, b))[0]) == 3.75 else 1.0
    except Exception as exc:
        result.note = f"{peer.name}: {type(exc).__name__}: {_short(exc)}"
        return None
    return lambda: add(a, b)


#: the name of the floor in a tiny row's ``issue_us`` and note
FLOOR = "native launch alone"


def note_issue_time(
    row: Row,
    timed: list[tuple[Row | PeerResult, Callable[[], Any], Callable[[], None]]],
    floor: tuple[Callable[[], Any], Callable[[], None]] | None = None,
) -> None:
    """Each contestant's host time alone (`issue_us`) in the row's note and extra; with
    `floor` (a bare launch and its sync, see `launch_floor`), timed in the same turns, also
    the floor and how far ours is over it."""
    if not timed:
        return
    contestants = [(fn, sync) for _, fn, sync in timed] + ([floor] if floor else [])
    got = issue_us(contestants)
    names = [who.name if isinstance(who, PeerResult) else "ours" for who, _, _ in timed]
    text = ", ".join(f"{name} {us:.2f}" for name, us in zip(names, got, strict=False))
    if floor:
        names.append(FLOOR)
        if timed[0][0] is row:
            text += f"; {FLOOR} {got[-1]:.2f}, ours {got[0] - got[-1]:+.2f} over it"
        else:
            text += f"; {FLOOR} {got[-1]:.2f}"
    row.extra["issue_us"] = dict(zip(names, got, strict=True))
    row.note = _join(row.note, f"host time alone (us/call, {ISSUE_CALLS} calls): {text}")


def launch_floor(
    row: Row, bench: Bench, sync: Callable[[], None]
) -> tuple[Callable[[], Any], Callable[[], None]] | None:
    """The bare native launch on the bench's GPU, on the stream current now, with `sync`: the
    host's floor under every tiny op. None off a GPU or without pygpukit-cuda; None, said in
    the row's note, where it cannot be made (the row keeps its figures)."""
    if bench.device.type != "cuda":
        return None
    try:
        from pygpukit_cuda.launch_floor import bare_launch
    except ImportError:
        return None
    try:
        return bare_launch(bench.device.index), sync
    except Exception as exc:
        row.note = _join(row.note, f"no launch floor: {type(exc).__name__}: {_short(exc)}")
        return None


def _ratios(row: Row) -> None:
    if row.stats is None or row.stats.median_ms <= 0:
        return
    for p in row.peers:
        if p.stats is not None:
            p.ratio = p.stats.median_ms / row.stats.median_ms


# -- compile ----------------------------------------------------------------------------
KERNEL = "pgk_bench_saxpy"
SOURCE = r"""
extern "C" __global__ void pgk_bench_saxpy(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def _source(tag: str) -> str:
    """The kernel with a comment no cache has seen (a new key in every cache)."""
    return f"// pygpukit benchmark {tag}\n{SOURCE}"


def _jit_missing(bench: Bench) -> str:
    if bench.device.type != "cuda":
        return f"gp.jit compiles for the cuda device; this run is on {bench.device}"
    from .._plugins import registry

    if registry().namespaces.get("jit") is None:
        return "gp.jit is not registered: pygpukit-cuda is not installed or did not load"
    import pygpukit as gp

    if not gp.is_nvrtc_available():
        return "NVRTC was not found: gp.jit cannot compile"
    return ""


def _saxpy_ok(gp: Any, kernel: Any, device: Any) -> bool:
    x = np.arange(1000, dtype=np.float32)
    xs, ys = gp.asarray(x, device=device), gp.asarray(np.ones_like(x), device=device)
    kernel(ys, xs, 2.0, x.size)
    return bool(np.array_equal(ys.to_numpy(), 2 * x + 1))


def run_compile(case: SpecialCase, bench: Bench) -> Row:
    row = Row(case.family, case.op, case.case, unit="ms")
    why = _jit_missing(bench)
    if why:
        row.status, row.note = MISSING, why
    else:
        try:
            if case.kind == "compile_cold":
                _compile_cold(row, bench)
            else:
                _compile_cached(row, bench)
        except Exception as exc:
            row.status, row.note = ERROR, f"{type(exc).__name__}: {_short(exc)}"
        finally:
            bench.release()
    for peer in bench.peers:
        row.peers.append(_compile_peer(case, peer, bench))
    _ratios(row)
    return row


def _compile_repeats(bench: Bench) -> int:
    return max(3, min(bench.repeats, 7))


def _compile_cold(row: Row, bench: Bench) -> None:
    import pygpukit as gp

    fresh = tempfile.TemporaryDirectory(prefix="pgk-bench-cache-")
    with fresh as tmp, gp.config.use(cache_dir=tmp):
        # loads NVRTC and the driver's module machinery once, outside the numbers
        warm = gp.jit(_source(f"warm {uuid.uuid4().hex}"), func=KERNEL, device=bench.device)
        if not _saxpy_ok(gp, warm, bench.device):
            row.status, row.note, row.error = FAIL, "the compiled kernel computed wrong", 1.0
            return
        samples = []
        for _ in range(_compile_repeats(bench)):
            src = _source(f"cold {uuid.uuid4().hex}")
            start = time.perf_counter()
            gp.jit(src, func=KERNEL, device=bench.device)
            samples.append((time.perf_counter() - start) * 1e3)
    row.stats, row.status, row.error = Stats.of(samples), PASS, 0.0
    row.provider = "cuda (NVRTC)"
    row.note = "gp.jit: NVRTC compile + module load; a fresh cache folder, an unseen source"


CHILD = r"""
import json, sys, time
import numpy as np
import pygpukit as gp
from pygpukit_cuda import compiler, launcher
spent = [0.0]
def timed(fn):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start
    return wrapper
# the compile work of a launch: choosing the target (loads NVRTC) and compile_source
compiler.compile_source = timed(compiler.compile_source)
launcher.target_for = timed(launcher.target_for)
src = open(sys.argv[1]).read()
device = gp.Device.parse("cuda:" + sys.argv[2])
x = np.arange(1000, dtype=np.float32)
xs, ys = gp.asarray(x, device=device), gp.asarray(np.ones_like(x), device=device)
t0 = time.perf_counter()
k = gp.jit(src, func=sys.argv[3], device=device)
t1 = time.perf_counter()
k(ys, xs, 2.0, x.size)
ok = bool(np.array_equal(ys.to_numpy(), 2 * x + 1))
t2 = time.perf_counter()
print(json.dumps({"jit_ms": (t1 - t0) * 1e3, "launch_ms": (t2 - t1) * 1e3, "ok": ok,
                  "compile_work_ms": spent[0] * 1e3, "stats": compiler.stats()}))
"""


def _child_env(cache_var: str, cache_dir: str) -> dict[str, str]:
    env = dict(os.environ)
    env[cache_var] = cache_dir
    here = str(Path(__file__).resolve().parents[2])  # the folder holding pygpukit
    env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _run_child(code: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"child process exited {proc.returncode}: {' | '.join(tail)}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _compile_cached(row: Row, bench: Bench) -> None:
    import pygpukit as gp

    with tempfile.TemporaryDirectory(prefix="pgk-bench-cache-") as tmp:
        src = _source(f"cached {uuid.uuid4().hex}")
        with gp.config.use(cache_dir=tmp):
            gp.jit(src, func=KERNEL, device=bench.device)  # fills the disk cache
        path = Path(tmp) / "source.cu"
        path.write_text(src)
        env = _child_env("PYGPUKIT_CACHE_DIR", tmp)
        samples, jits, launches, work = [], [], [], []
        for _ in range(_compile_repeats(bench)):
            out = _run_child(CHILD, [str(path), str(bench.device.index), KERNEL], env)
            stats = out["stats"]
            if not out["ok"] or stats.get("compiled", 1) != 0 or stats.get("disk_hits", 0) < 1:
                row.status, row.error = FAIL, 1.0
                row.note = (f"the new process did not take the kernel from the disk cache "
                            f"or computed wrong: {out}")  # fmt: skip
                return
            jits.append(out["jit_ms"])
            work.append(out["compile_work_ms"])
            launches.append(out["launch_ms"])
            samples.append(out["jit_ms"] + out["launch_ms"])
    row.stats, row.status, row.error = Stats.of(samples), PASS, 0.0
    row.provider = "cuda (disk cache)"
    row.extra = {
        "jit_ms": Stats.of(jits).median_ms,
        "compile_work_ms": Stats.of(work).median_ms,
        "first_launch_ms": Stats.of(launches).median_ms,
    }
    row.note = (
        f"in a new process: gp.jit {row.extra['jit_ms']:.2f} ms, of which compile work "
        f"(NVRTC load, target choice, disk-cache read) {row.extra['compile_work_ms']:.2f} ms; "
        f"first launch and copy back {row.extra['first_launch_ms']:.2f} ms; 0 compiles"
    )


CUPY_CHILD = r"""
import json, sys, time
import numpy as np
import cupy as cp
src = open(sys.argv[1]).read()
cp.cuda.Device(int(sys.argv[2])).use()
x = cp.arange(1000, dtype=cp.float32); y = cp.ones_like(x)
cp.cuda.Device().synchronize()
t0 = time.perf_counter()
k = cp.RawKernel(src, sys.argv[3]); k.compile()
t1 = time.perf_counter()
k((4,), (256,), (y, x, np.float32(2.0), np.int32(1000)))
ok = bool((cp.asnumpy(y) == 2 * np.arange(1000, dtype=np.float32) + 1).all())
t2 = time.perf_counter()
print(json.dumps({"jit_ms": (t1 - t0) * 1e3, "launch_ms": (t2 - t1) * 1e3, "ok": ok}))
"""


def _compile_peer(case: SpecialCase, peer: Peer, bench: Bench) -> PeerResult:
    result = PeerResult(peer.name)
    if peer.name != "cupy":
        result.note = f"{peer.name}: no run-time compiler comparable to gp.jit"
        return result
    if not peer.load():
        result.note = peer.note
        return result
    cp = peer.xp
    samples: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="pgk-bench-cupy-") as tmp:
            old = os.environ.get("CUPY_CACHE_DIR")
            os.environ["CUPY_CACHE_DIR"] = tmp
            try:
                warm = cp.RawKernel(_source(f"warm {uuid.uuid4().hex}"), KERNEL)
                warm.compile()
                if case.kind == "compile_cold":
                    for _ in range(_compile_repeats(bench)):
                        k = cp.RawKernel(_source(f"cold {uuid.uuid4().hex}"), KERNEL)
                        start = time.perf_counter()
                        k.compile()
                        samples.append((time.perf_counter() - start) * 1e3)
                    result.note = "cupy.RawKernel(...).compile(), a source no cache has seen"
                else:
                    src = _source(f"cached {uuid.uuid4().hex}")
                    cp.RawKernel(src, KERNEL).compile()
                    path = Path(tmp) / "source.cu"
                    path.write_text(src)
                    env = _child_env("CUPY_CACHE_DIR", tmp)
                    for _ in range(_compile_repeats(bench)):
                        out = _run_child(CUPY_CHILD, [str(path), str(bench.device.index),
                                                      KERNEL], env)  # fmt: skip
                        if not out["ok"]:
                            raise RuntimeError("cupy's cached kernel computed wrong")
                        samples.append(out["jit_ms"] + out["launch_ms"])
                    result.note = "cupy.RawKernel from CuPy's disk cache in a new process"
            finally:
                if old is None:
                    os.environ.pop("CUPY_CACHE_DIR", None)
                else:
                    os.environ["CUPY_CACHE_DIR"] = old
        result.stats = Stats.of(samples)
        result.error = 0.0
    except Exception as exc:
        result.note = _join(result.note, f"cupy: {type(exc).__name__}: {_short(exc)}")
    return result


def run_special(case: SpecialCase, bench: Bench) -> Row:
    if case.kind == "tiny":
        return run_tiny(case, bench)
    if case.kind.startswith("llm_"):
        from .llm_decode import run_llm

        return run_llm(case, bench)
    if case.kind.startswith("launch_"):
        from .launch_path import run_launch

        return run_launch(case, bench)
    if case.kind.startswith("qos"):
        from .qos import run_qos

        return run_qos(case, bench)
    if case.kind == "audio_whisper":  # pygpukit-audio's Whisper row (it built the case)
        from pygpukit.audio.bench_whisper import run_whisper

        return run_whisper(case, bench)
    if case.kind == "transfer":
        from .transfer import run_transfer  # its own module: it imports this one's peers

        return run_transfer(case, bench)
    return run_compile(case, bench)
