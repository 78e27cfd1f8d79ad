"""Where a matmul's host time goes, and what the cuBLASLt trial chose: per-call time of
``gp.matmul`` and of the cuda kernel alone beside ``torch.matmul`` (small and 1024 sizes),
a cProfile of ours, then for 4096 products the candidates' trial times and the chosen
algorithm against the heuristic's first (device events, alternating, same operands).

    python scripts/profile_matmul.py [--calls 3000] [--top 30] [--sizes 64,1024]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable

import numpy as np
import pygpukit as gp
from profile_tiny_op import per_call_us  # scripts/ is on sys.path when run
from pygpukit_cuda import cublaslt
from pygpukit_cuda import matmul as mm


def events_ms(fn: Callable[[], object], reps: int) -> float:
    start, end = gp.cuda.Event(), gp.cuda.Event()
    fn()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return gp.cuda.get_elapsed_time(start, end) / reps


def host_row(n: int, name: str, tf32: bool, calls: int) -> None:
    import torch

    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    ga = gp.asarray(a, device="cuda").astype(name)
    gb = gp.asarray(b, device="cuda").astype(name)
    out = gp.empty((n, n), dtype=name, device="cuda")
    ta = torch.from_numpy(a).cuda().to(getattr(torch, name))
    tb = torch.from_numpy(b).cuda().to(getattr(torch, name))
    torch.backends.cuda.matmul.allow_tf32 = tf32
    with gp.config.use(allow_tf32=tf32):
        full = per_call_us(lambda: gp.matmul(ga, gb), calls, gp.cuda.synchronize)
        kern = per_call_us(lambda: mm.matmul(ga, gb, out, tf32), calls, gp.cuda.synchronize)
    tor = per_call_us(lambda: torch.matmul(ta, tb), calls, torch.cuda.synchronize)
    torch.backends.cuda.matmul.allow_tf32 = False
    label = f"{n} {name}{' tf32' if tf32 else ''}"
    print(f"{label:<18} gp.matmul {full:7.2f} us  kernel only {kern:7.2f} us  "
          f"torch {tor:7.2f} us  vs torch {tor / full:5.2f}x")  # fmt: skip


def profile(n: int, calls: int, top: int) -> None:
    ga = gp.asarray(np.random.default_rng(1).standard_normal((n, n)), device="cuda")
    ga = ga.astype("bfloat16")
    gp.matmul(ga, ga)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        gp.matmul(ga, ga)
    gp.cuda.synchronize()
    prof.disable()
    print(f"\ncProfile of {calls} gp.matmul {n}x{n} bfloat16 (own time first)")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def trial_row(n: int, name: str, tf32: bool) -> None:
    import torch

    rng = np.random.default_rng(4)
    a = rng.standard_normal((n, n)).astype(np.float32)
    ga = gp.asarray(a, device="cuda").astype(name)
    gb = gp.asarray(a.T.copy(), device="cuda").astype(name)
    out = gp.empty((n, n), dtype=name, device="cuda")
    t0 = time.perf_counter()
    mm.matmul(ga, gb, out, tf32)
    gp.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
    key = mm._ready_key(ga, gb, out, tf32, mm._ptr(ga), mm._ptr(gb), mm._ptr(out))
    plan = mm._ready[key].plan
    chosen = plan.choice
    trial = {i: round(t, 4) for i, t in plan.trial_ms.items()}
    reps = 20 if n <= 4096 else 5
    ta = torch.from_numpy(a).cuda().to(getattr(torch, name))
    tb = torch.from_numpy(a.T.copy()).cuda().to(getattr(torch, name))
    torch.backends.cuda.matmul.allow_tf32 = tf32
    ours = lambda: mm.matmul(ga, gb, out, tf32)  # noqa: E731
    rounds: dict[str, list[float]] = {"first": [], "chosen": [], "torch": []}
    for _ in range(3):  # alternate, so clock drift hits all three alike
        plan.choice = 0
        rounds["first"].append(events_ms(ours, reps))
        plan.choice = chosen
        rounds["chosen"].append(events_ms(ours, reps))
        rounds["torch"].append(events_ms(lambda: torch.matmul(ta, tb), reps))
    torch.backends.cuda.matmul.allow_tf32 = False
    med = {k: float(np.median(v)) for k, v in rounds.items()}
    label = f"{n} {name}{' tf32' if tf32 else ''}"
    print(f"{label:<18} candidates {len(plan.choices)} trial ms {trial} chose {chosen}; "
          f"first call {first_ms:.1f} ms; heuristic-first {med['first']:.4f} ms, chosen "
          f"{med['chosen']:.4f} ms, torch {med['torch']:.4f} ms: vs torch first "
          f"{med['torch'] / med['first']:.3f}x, chosen "
          f"{med['torch'] / med['chosen']:.3f}x")  # fmt: skip


MODES = (("bfloat16", False), ("float32", False), ("float32", True), ("float16", False))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--sizes", default="64,1024")
    ap.add_argument("--trial-size", type=int, default=4096)
    args = ap.parse_args()
    print(cublaslt.status())
    for n in (int(s) for s in args.sizes.split(",")):
        for name, tf32 in MODES[:3]:
            host_row(n, name, tf32, args.calls)
    profile(64, args.calls, args.top)
    for name, tf32 in MODES:
        trial_row(args.trial_size, name, tf32)


if __name__ == "__main__":
    main()
