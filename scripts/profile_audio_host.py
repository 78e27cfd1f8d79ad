"""Host microseconds per stft / melspectrogram call on a stub GPU (no device needed), at the
benchmark's shape: 10 minutes at 16 kHz, n_fft 400, hop 160 (80 mels).

    python scripts/profile_audio_host.py [--calls 2000] [--profile stft|mel] [--top 30]

On a GPU each call's host time sits between its kernels (the H100 showed ~110 us of idle
gaps per stft call with the old path), so it must stay well under the device time (stft
~220 us, log-mel ~390 us there). The stub records no launches and cuFFT is a no-op plan
(scripts/profile_fft_host.py), so this is the Python path alone: real launches, the cuFFT
call and the NaN-flag read add a few microseconds each on a GPU.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import profile_fft_host  # scripts/ is on sys.path when run


def install() -> None:
    """The stub GPU and cuFFT; downloads give zeros (the NaN flag reads clear)."""
    profile_fft_host.install()
    from pygpukit_cuda import device

    def download(self: Any, buffer: Any, offset: int, out: np.ndarray) -> None:
        out.fill(0)

    device.CudaBackend.download = download  # type: ignore[method-assign]


def per_call_us(fn: Callable[[], object], calls: int, repeats: int = 20) -> float:
    """The least CPU time of this process per call over `repeats` runs of `calls // repeats`
    calls: CPU time, not wall time, so other processes on a busy machine count less."""
    for _ in range(50):
        fn()
    each = max(1, calls // repeats)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(each):
            fn()
        best = min(best, (time.process_time() - t0) / each * 1e6)
    return best


def cases(seconds: int) -> dict[str, Callable[[], object]]:
    import pygpukit as gp
    from pygpukit.audio import spectral

    y = gp.asarray(np.zeros(16000 * seconds, np.float32), device="cuda:0")
    return {
        "stft": lambda: spectral.stft(y, n_fft=400, hop_length=160),
        "mel": lambda: spectral.melspectrogram(y=y, sr=16000, n_fft=400, hop_length=160, n_mels=80),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--seconds", type=int, default=600, help="signal length (16 kHz)")
    ap.add_argument("--profile", choices=("stft", "mel"), default=None)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    install()
    table = cases(args.seconds)
    for name, fn in table.items():
        us = per_call_us(fn, args.calls)
        print(f"{name:<6} {us:8.2f} us/call (host only, stub GPU, {args.seconds} s signal)")
    if args.profile:
        fn = table[args.profile]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            fn()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
