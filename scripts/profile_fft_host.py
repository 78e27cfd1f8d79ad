"""Host microseconds per gp.fft call on a stub GPU (no device needed): the Python path from
`gp.fft.rfft` to cuFFT's execute, with cuFFT replaced by a no-op plan.

    python scripts/profile_fft_host.py [--calls 2000] [--profile CASE]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
from collections.abc import Callable
from typing import Any

import numpy as np
import stub_cuda  # scripts/ is on sys.path when run
from profile_tiny_op import per_call_us


class _NoopPlan:
    """Stands in for the native FftPlan: a work area is asked for, nothing is executed."""

    work_bytes = 1 << 16
    type = 0

    def __call__(self, stream: int, inp: int, out: int, work: int, direction: int) -> None:
        pass


class _NoopCufft:
    path = "stub"
    version = 11300

    def plan(self, *args: Any) -> _NoopPlan:
        return _NoopPlan()


def install() -> None:
    """The stub GPU of stub_cuda, plus a stub cuFFT."""
    ctx = stub_cuda.install()
    # device-to-device copies (irfft's private input) are recorded like launches: not at all
    ctx.copy_async = lambda dst, src, nbytes, stream: None
    from pygpukit_cuda import cufft

    cufft._lib, cufft._tried, cufft._status = _NoopCufft(), True, "stub cuFFT"


def cases() -> dict[str, Callable[[], object]]:
    import pygpukit as gp

    def dev(shape: tuple[int, ...], dtype: Any) -> Any:
        return gp.asarray(np.zeros(shape, dtype), device="cuda:0")

    r = dev((4096, 1024), np.float32)
    frames = dev((3000, 400), np.float32)
    spec = dev((4096, 513), np.complex64)
    z = dev((64, 1024), np.complex64)
    big = dev((1 << 24,), np.complex64)  # the benchmark's one-signal row (128 MiB of host memory)
    return {
        "rfft 4096x1024": lambda: gp.fft.rfft(r),
        "rfft 3000x400": lambda: gp.fft.rfft(frames),
        "irfft 4096x513->1024": lambda: gp.fft.irfft(spec, n=1024),
        "fft c64 64x1024": lambda: gp.fft.fft(z),
        "fft c64 2^24": lambda: gp.fft.fft(big),
        "ifft c64 64x1024 ortho": lambda: gp.fft.ifft(z, norm="ortho"),
        "rfftn 3000x400": lambda: gp.fft.rfftn(frames),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--profile", default=None, help="a case name to cProfile")
    args = ap.parse_args()
    install()
    table = cases()
    for name, fn in table.items():
        us = per_call_us(fn, args.calls, lambda: None)
        print(f"{name:<24} {us:7.2f} us/call (host only, stub cuFFT)")
    if args.profile:
        fn = table[args.profile]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            fn()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
