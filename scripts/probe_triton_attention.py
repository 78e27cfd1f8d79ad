"""Time every causal flash attention candidate of the triton provider beside torch's SDPA.

One run on the GPU (about 1-2 minutes on an H100) covers the benchmark's four cases
(bfloat16/float16 x head_dim 64/128, 16 heads x 2048 queries, batch 1, causal): every
candidate of a wide sweep (tile shape, warps, stages, the SCHED mapping of programs to
query blocks, LAZY rescaling, K/V through tensor descriptors: the "tma" rows), the current
CONFIGS lists, the kernel of an older commit (`--old-rev`, read through git where the
checkout has its history) and the benchmark's own call (dispatch). Each is timed
with CUDA events two ways: the same inputs called again and again (what the tuner sees),
and rotating copies of the inputs past the L2 (what `python -m pygpukit.benchmark` does);
torch's SDPA is timed the same two ways in the same interleaved rounds. Every candidate's
result is checked against torch's. Printed: a table per case, the best pick per case, and
candidate lists for kernels/attention.py ranked by the slower of the two dtypes.

    python scripts/probe_triton_attention.py                  # everything
    python scripts/probe_triton_attention.py --cases bfloat16:64 --rounds 5
    python scripts/probe_triton_attention.py --no-old --jobs 8

Compiles run first, in parallel worker processes, so the timed process finds every
kernel in Triton's disk cache.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OLD_PATH = "pygpukit-triton/src/pygpukit/triton/programs/attention.py"
SCHEDS = ("heavy", "pair", "snake", "zip")
#: tile shapes swept per head width: (BM, BN, warps, stages), each under every SCHED
SWEEP = {
    64: [(128, 64, 8, 2), (128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 2), (128, 128, 8, 3),
         (64, 64, 4, 2), (64, 64, 4, 3), (64, 64, 4, 4), (64, 128, 4, 2), (64, 128, 4, 3)],
    128: [(128, 64, 8, 2), (128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 2), (64, 64, 4, 2),
          (64, 64, 4, 3), (64, 64, 4, 4), (64, 128, 8, 2), (64, 32, 4, 3)],
}  # fmt: skip
#: H100 (sm_90) per-SM limits, for the residency column
SM_REGS, SM_SHARED, SM_WARPS, BLOCK_RESERVED = 65536, 233472, 64, 1024


@dataclass
class Candidate:
    """One launch configuration of one kernel (new: this checkout's; old: --old-rev's)."""

    kernel: str
    config: tuple[Any, ...]
    tags: set[str] = field(default_factory=set)
    steady_ms: float = math.inf
    rotating_ms: float = math.inf
    error: float = math.nan
    regs: int = 0
    shared: int = 0
    failed: str = ""

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.config}"


def main() -> None:
    args = _parse()
    from pygpukit.triton.kernels import attention as ka

    old = _old_program(args.old_rev) if args.old_rev else None
    if args.old_rev and old is None:
        print(f"# old kernel: no git history for {args.old_rev} here; the new kernel's "
              "heavy/pair rows run the old tile code (only the program->block map "
              "differs)")  # fmt: skip
    cases = [(dt, int(d)) for dt, d in (c.split(":") for c in args.cases.split(","))]
    per_case = {c: _candidates(ka, old, c[1]) for c in cases}
    t0 = time.time()
    _precompile(per_case, old, args)
    print(f"# precompiled in {time.time() - t0:.0f} s ({args.jobs} processes)", flush=True)
    if args.compile_only:
        for case, cands in per_case.items():
            for c in cands:
                print(case, c.label, c.failed or "ok")
        return
    import pygpukit as gp
    import torch

    winners: dict[tuple[str, int], Candidate] = {}
    torch_ms: dict[tuple[str, int], tuple[float, float]] = {}
    for case, cands in per_case.items():
        t1 = time.time()
        torch_ms[case] = _run_case(gp, torch, ka, old, case, cands, args)
        _print_case(case, cands, torch_ms[case], time.time() - t1)
        ok = [c for c in cands
              if c.kernel != "dispatch" and not c.failed and c.error <= _tol(case[0])]  # fmt: skip
        if ok:
            winners[case] = min(ok, key=lambda c: c.steady_ms)
    print("\n## best pick per case (steady; rotating in brackets)")
    for case, best in winners.items():
        ts, tr = torch_ms[case]
        print(f"{case[0]:9} d{case[1]:<4} {best.label:50} {best.steady_ms * 1e3:7.1f} us "
              f"{ts / best.steady_ms:5.2f}x torch  [{best.rotating_ms * 1e3:7.1f} us "
              f"{tr / best.rotating_ms:5.2f}x]")  # fmt: skip
    _print_lists(per_case)
    _print_tuned(args.seq)


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="bfloat16:64,float16:64,bfloat16:128,float16:128")
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (best kept)")
    p.add_argument("--window-ms", type=float, default=2.0, help="GPU time per timed window")
    p.add_argument("--jobs", type=int, default=max(1, min(16, (os.cpu_count() or 2) - 1)))
    p.add_argument("--old-rev", default="2584c8f", help="git revision of the old kernel ('' skips)")
    p.add_argument("--no-old", dest="old_rev", action="store_const", const="")
    p.add_argument(
        "--compile-only",
        type=int,
        default=0,
        metavar="ARCH",
        help="no GPU: compile every candidate for sm_ARCH (e.g. 90) and stop",
    )
    return p.parse_args()


def _candidates(ka: Any, old: Any, d: int) -> list[Candidate]:
    current = set(ka.CONFIGS_D64 if d <= 64 else ka.CONFIGS_D128)
    found: dict[tuple[Any, ...], Candidate] = {}
    for base in SWEEP[d]:
        for sched in SCHEDS:
            for lazy in (False, True):
                c = (*base, sched, lazy)
                found[c] = Candidate("new", c, {"list"} if c in current else set())
    for c in current:
        found.setdefault(c, Candidate("new", c, {"list"}))
    out = list(found.values())
    # K/V through tensor descriptors (USE_TMA): each tile shape, heavy and snake, not lazy
    out += [Candidate("tma", (*base, sched, False)) for base in SWEEP[d]
            for sched in ("heavy", "snake")]  # fmt: skip
    # the whole call as the benchmark makes it (its pick: the tuner's, from the lists)
    out.append(Candidate("dispatch", ("gp.sdpa_causal", "backend=triton"), {"tuned"}))
    if old is not None:
        lists = old.CONFIGS_D64 if d <= 64 else old.CONFIGS_D128
        out += [Candidate("old", tuple(c), {"old list"}) for c in lists]
    return out


def _old_program(rev: str) -> Any:
    """Module `programs/attention.py` and the launcher's lists as of `rev`, or None."""
    try:
        prog = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{OLD_PATH}"],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        kern = subprocess.run(["git", "-C", str(ROOT), "show",
                               f"{rev}:{OLD_PATH.replace('programs', 'kernels')}"],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    folder = Path(tempfile.mkdtemp(prefix="old_attention_"))
    (folder / "old_attention_program.py").write_text(prog)  # triton.jit reads the file
    module = _import(folder / "old_attention_program.py")
    lists: dict[str, Any] = {}
    for name in ("CONFIGS_D64", "CONFIGS_D128"):
        m = re.search(rf"^{name} = (\[.*?\])", kern, re.S | re.M)
        lists[name] = eval(m.group(1)) if m else []  # our own repository's literal lists
    module.CONFIGS_D64, module.CONFIGS_D128 = lists["CONFIGS_D64"], lists["CONFIGS_D128"]
    module.PATH = str(folder / "old_attention_program.py")
    return module


def _import(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


# --- what one launch compiles: the launcher's specialisation, rebuilt without a GPU ---


def _launch_parts(kernel: str, c: tuple[Any, ...], dtype: str, d: int, heads: int, seq: int,
                  wave: int) -> tuple[tuple[str, ...], tuple[tuple[str, Any], ...], int, int,
                                      list[Any], tuple[int, ...]]:  # fmt: skip
    """(types, constexprs, align, ones, values, grid) as kernels/attention.py builds them for
    contiguous (1, heads, seq, d) operands (16-aligned pointers)."""
    from pygpukit.triton.compiled import triton_type
    from pygpukit.triton.kernels import attention as ka

    bm, bn, _, _, sched, *lazy = c  # the old kernel's tuples end at PAIR
    strides = [heads * seq * d, seq * d, d, 1] * 4
    scalars = [heads, 1, seq, seq, d, d] + ([wave] if kernel != "old" else [])
    values: list[Any] = [0, 0, 0, 0, *scalars, 0.125, *strides]
    t = f"*{triton_type(dtype)}"
    types = (t,) * 4 + ("i32",) * len(scalars) + ("fp32",) + ("i64",) * 16
    consts: tuple[tuple[str, Any], ...] = (
        ("BM", bm), ("BN", bn), ("BD", d), ("BDV", d), ("IEEE", False), ("UPCAST", False),
        ("EVEN_D", True), ("SCALE_POS", True),
    )  # fmt: skip
    blocks = -(-seq // bm)
    if kernel != "old":
        consts += (("SCHED", ka.SCHEDULES[sched]), ("LAZY", lazy[0]), ("TMA", kernel == "tma"))
        grid = ka.grid(c, heads, seq)
    else:
        consts += (("PAIR", bool(sched)),)
        grid = (heads, -(-blocks // 2) if sched else blocks)
    align = ones = 0
    for i, v in enumerate(values):
        if i < 4:
            align |= 1 << i
        elif type(v) is int:
            if v == 1:
                ones |= 1 << i
            elif v % 16 == 0:
                align |= 1 << i
    return types, consts, align, ones, values, grid


def _compile_one(job: tuple[str, str, tuple[Any, ...], str, int, int, int, int, int]) -> str:
    """Worker: compile one candidate into Triton's disk cache ('' or why it failed)."""
    path, kernel, c, dtype, d, heads, seq, arch, wave = job
    try:
        from pygpukit.triton.launch import Program

        fn = _import(Path(path)).flash_causal if path else _new_fn()
        types, consts, align, ones, _, _ = _launch_parts(kernel, c, dtype, d, heads, seq, wave)
        Program(fn).compile(arch, types, consts, c[2], c[3], align, ones)
        return ""
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''}"


def _new_fn() -> Any:
    from pygpukit.triton.programs import attention

    return attention.flash_causal


def _precompile(per_case: dict[tuple[str, int], list[Candidate]], old: Any,
                args: argparse.Namespace) -> None:  # fmt: skip
    if args.compile_only:
        arch, wave = args.compile_only, 132
    else:
        from pygpukit_cuda import cubin
        from pygpukit_cuda.device_facts import sm_count

        arch, wave = cubin.compute_capability(0), sm_count(0)
    jobs, owners = [], []
    for (dtype, d), cands in per_case.items():
        for cand in cands:
            if cand.kernel == "dispatch":
                continue
            path = old.PATH if cand.kernel == "old" else ""
            jobs.append((path, cand.kernel, cand.config, dtype, d, args.heads, args.seq, arch,
                         wave))  # fmt: skip
            owners.append(cand)
    with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
        for cand, why in zip(owners, pool.map(_compile_one, jobs), strict=True):
            cand.failed = why


# --- timing ---


def _run_case(gp: Any, torch: Any, ka: Any, old: Any, case: tuple[str, int],
              cands: list[Candidate], args: argparse.Namespace) -> tuple[float, float]:  # fmt: skip
    """Time every candidate of `case` and torch; returns torch's (steady, rotating) ms."""
    from pygpukit.triton.launch import Program

    dtype, d = case
    shape = (1, args.heads, args.seq, d)
    rng = np.random.default_rng(7)
    scale = 1.0 / math.sqrt(d)
    set_bytes = 3 * math.prod(shape) * 2
    l2 = _l2_bytes()
    copies = max(2, min(64, math.ceil(4 * l2 / set_bytes)))  # as the benchmark rotates
    host = [[rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
            for _ in range(copies)]  # fmt: skip
    ours = [[gp.asarray(a, device="cuda").astype(dtype) for a in s] for s in host]
    tdt = getattr(torch, dtype)
    theirs = [[torch.from_numpy(a).cuda().to(tdt) for a in s] for s in host]
    out = gp.empty(shape, dtype=dtype, device="cuda")
    sdpa = torch.nn.functional.scaled_dot_product_attention
    want = sdpa(*theirs[0], is_causal=True).float().cpu().numpy()
    old_program = Program(old.flash_causal) if old is not None else None
    wave = ka._wave(out)
    old_parts: dict[tuple[Any, ...], Any] = {}

    def ours_call(cand: Candidate, q: Any, k: Any, v: Any) -> Any:
        if cand.kernel == "dispatch":  # the benchmark's call: dispatch, tuner, a new output
            return gp.sdpa_causal(q, k, v, backend="triton")
        if cand.kernel == "new":
            ka.sdpa_causal(q, k, v, out, scale, cand.config)
            return out
        if cand.kernel == "tma":
            ka.USE_TMA = True
            try:
                ka.sdpa_causal(q, k, v, out, scale, cand.config)
            finally:
                ka.USE_TMA = False
            return out
        parts = old_parts.get(cand.config)
        if parts is None:  # built once: the timed loop pays for the launch alone
            parts = old_parts[cand.config] = _launch_parts("old", cand.config, dtype, d,
                                                           args.heads, args.seq, wave)  # fmt: skip
        types, consts, _, _, _, grid = parts
        vals = [q, k, v, out, args.heads, 1, args.seq, args.seq, d, d, scale]
        vals += [s // 2 for a in (q, k, v, out) for s in a.strides]
        assert old_program is not None
        old_program(grid, vals, types, consts, num_warps=cand.config[2],
                    num_stages=cand.config[3])  # fmt: skip
        return out

    runners: list[tuple[Candidate | None, Callable[[int], None], Callable[[], Any]]] = []
    for cand in cands:
        if cand.failed:
            continue
        try:
            got = ours_call(cand, *ours[0]).astype("float32").to_numpy()
            cand.error = float(np.abs(got - want).max())
            if cand.kernel != "dispatch":
                cand.regs, cand.shared = _resources(ka, old, cand, dtype, d, args, wave)
        except Exception as exc:
            cand.failed = f"{type(exc).__name__}: {str(exc)[:80]}"
            continue
        runners.append((cand, _cycler(_bound(ours_call, cand), ours), gp.cuda.Event))
    runners.append((None, _cycler(lambda s: sdpa(*s, is_causal=True), theirs),
                    lambda: torch.cuda.Event(enable_timing=True)))  # fmt: skip
    torch_ms = [math.inf, math.inf]
    warm_until = time.time() + 0.3
    while time.time() < warm_until:  # clocks up before the first timed window
        runners[0][1](-20)
        gp.cuda.synchronize()
    torch.cuda.synchronize()
    for mode in (0, 1):  # 0: the same inputs (steady), 1: rotating copies
        for _ in range(args.rounds):  # interleaved: a slow moment hits every contestant
            for who, run, event in runners:
                ms = _window(run, event, mode, args.window_ms, copies)
                if who is None:
                    torch_ms[mode] = min(torch_ms[mode], ms)
                elif mode == 0:
                    who.steady_ms = min(who.steady_ms, ms)
                else:
                    who.rotating_ms = min(who.rotating_ms, ms)
    return torch_ms[0], torch_ms[1]


def _bound(call: Callable[..., None], cand: Candidate) -> Callable[[Any], None]:
    return lambda s: call(cand, *s)


def _cycler(call: Callable[[Any], None], sets: list[Any]) -> Callable[[int], None]:
    """run(n): n calls; n > 0 rotates through the copies, n < 0 repeats the first set."""

    def run(n: int) -> None:
        if n < 0:
            first = sets[0]
            for _ in range(-n):
                call(first)
            return
        for i in range(n):
            call(sets[i % len(sets)])

    return run


def _window(run: Callable[[int], None], event: Callable[[], Any], mode: int, window_ms: float,
            copies: int) -> float:  # fmt: skip
    """Per-call ms of one window of back-to-back calls lasting about `window_ms`."""
    start, end = event(), event()
    n = -4 if mode == 0 else 4
    start.record()
    run(n)
    end.record()
    end.synchronize()
    per = max(start.elapsed_time(end) if hasattr(start, "elapsed_time") else
              _elapsed(start, end), 1e-3) / abs(n)  # fmt: skip
    calls = max(8, min(400, math.ceil(window_ms / per)))
    if mode == 1:
        calls = max(copies, calls // copies * copies)  # whole passes over the copies
    start.record()
    run(-calls if mode == 0 else calls)
    end.record()
    end.synchronize()
    total = start.elapsed_time(end) if hasattr(start, "elapsed_time") else _elapsed(start, end)
    return float(total) / calls


def _elapsed(start: Any, end: Any) -> float:
    import pygpukit as gp

    return float(gp.cuda.get_elapsed_time(start, end))


def _l2_bytes() -> int:
    from pygpukit_cuda.device_facts import l2_bytes

    return int(l2_bytes(0)) or (50 << 20)


def _resources(ka: Any, old: Any, cand: Candidate, dtype: str, d: int,
               args: argparse.Namespace, wave: int) -> tuple[int, int]:  # fmt: skip
    """(registers per thread, shared bytes) of the compiled candidate (0 registers where
    Triton ships no cuobjdump)."""
    import triton
    from pygpukit.triton.launch import Program
    from pygpukit_cuda import cubin

    fn = old.flash_causal if cand.kernel == "old" else ka.ap.flash_causal
    types, consts, align, ones, _, _ = _launch_parts(cand.kernel, cand.config, dtype, d,
                                                     args.heads, args.seq, wave)  # fmt: skip
    c = Program(fn).compile(cubin.compute_capability(0), types, consts, cand.config[2],
                            cand.config[3], align, ones)  # fmt: skip
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not tool.exists():
        return 0, c.shared
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(c.cubin)
        f.flush()
        text = subprocess.run([str(tool), "--dump-resource-usage", f.name],
                              capture_output=True, text=True).stdout  # fmt: skip
    m = re.search(r"REG:(\d+)", text)
    return (int(m.group(1)) if m else 0), c.shared


def _resident(c: Candidate) -> int:
    """Programs one SM holds at once (registers, shared memory, warps)."""
    if c.kernel == "dispatch":
        return 0
    warps = c.config[2]
    by_regs = SM_REGS // (max(8, -(-c.regs // 8) * 8) * 32 * warps) if c.regs else 99
    by_shared = SM_SHARED // (c.shared + BLOCK_RESERVED)
    return max(0, min(by_regs, by_shared, SM_WARPS // warps))


def _tol(dtype: str) -> float:
    return 3e-2 if dtype == "bfloat16" else 5e-3


# --- output ---


def _print_case(case: tuple[str, int], cands: list[Candidate], torch_ms: tuple[float, float],
                took: float) -> None:  # fmt: skip
    dtype, d = case
    ts, tr = torch_ms
    print(f"\n## {dtype} head_dim {d}: torch SDPA {ts * 1e3:.1f} us steady, {tr * 1e3:.1f} us "
          f"rotating ({took:.0f} s)")  # fmt: skip
    print(f"{'kernel (BM, BN, warps, stages, SCHED, LAZY)':50} {'steady us':>9} {'x torch':>7} "
          f"{'rotating':>9} {'x torch':>7} {'regs':>4} {'smem':>5} {'/SM':>3} "
          f"{'err':>8}  tags")  # fmt: skip
    for c in sorted(cands, key=lambda c: (bool(c.failed), c.steady_ms)):
        if c.failed:
            print(f"{c.label:50} failed: {c.failed}")
            continue
        bad = "  WRONG" if not c.error <= _tol(dtype) else ""
        print(f"{c.label:50} {c.steady_ms * 1e3:9.1f} {ts / c.steady_ms:7.2f} "
              f"{c.rotating_ms * 1e3:9.1f} {tr / c.rotating_ms:7.2f} {c.regs:4} "
              f"{c.shared // 1024:4}K {_resident(c):3} {c.error:8.1e}  "
              f"{','.join(sorted(c.tags))}{bad}")  # fmt: skip
    sys.stdout.flush()


def _print_lists(per_case: dict[tuple[str, int], list[Candidate]]) -> None:
    """Eight new-kernel candidates per head width, by the slower dtype's time: steady (what
    the tuner measures) and rotating (what the benchmark measures)."""
    for mode in ("steady", "rotating"):
        print(f"\n## suggested candidate lists (new kernel; by the slower dtype, {mode})")
        for (d, name), kernel in itertools.product(((64, "CONFIGS_D64"), (128, "CONFIGS_D128")),
                                                   ("new", "tma")):  # fmt: skip
            worst: dict[tuple[Any, ...], float] = {}
            for (_, dd), cands in per_case.items():
                for c in cands:
                    if dd != d or c.kernel != kernel:
                        continue
                    t = c.steady_ms if mode == "steady" else c.rotating_ms
                    t = t if not c.failed and c.error <= _tol("float16") * 10 else math.inf
                    worst[c.config] = max(worst.get(c.config, 0.0), t)
            ranked = [c for c in sorted(worst, key=lambda c: worst[c]) if math.isfinite(worst[c])]
            if ranked:
                note = "  # with USE_TMA = True" if kernel == "tma" else ""
                print(f"{name} = [{', '.join(repr(c) for c in ranked[:8])}]{note}")
                print(f"#   us: {[round(worst[c] * 1e3, 1) for c in ranked[:8]]}")


def _print_tuned(seq: int) -> None:
    """What the tuner picked for the dispatch rows (from the lists in kernels/attention.py)."""
    from pygpukit.triton import autotune
    from pygpukit.triton.kernels import attention as ka

    print("\n## tuner picks (the 'dispatch' rows)")
    s = 1 << max(4, (seq - 1).bit_length())
    for full, entry in sorted(autotune.table().items()):
        if full.startswith(f"sdpa_causal|{ka._source()}|") and f"|{s}|{s}|" in full:
            print(
                f"{full.split('|')[2]:9} d{full.split('|')[3]:<4} {entry['config']:36} "
                f"ms per candidate: {entry['ms']}"
            )


if __name__ == "__main__":
    main()
