"""Device microseconds of the audio framing kernels (warp-per-frame vs the ElementwiseKernel)
and of whole stft / melspectrogram calls with each, on a GPU.

    python scripts/probe_audio_frames.py [--calls 50]

The benchmark's 600 s stft went from 354 us to 986 us when the fused framing kernel came in;
this times the pieces on their own so the cause shows: each framing kernel alone (events
around back-to-back launches), the rfft of the frames, and the whole calls (each ends with
the NaN-flag read, so host time counts, as in the benchmark).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _device_us(fn: Callable[[], Any], calls: int) -> float:
    from pygpukit_cuda import streams
    from pygpukit_cuda._loader import driver
    from pygpukit_cuda.device import context

    ctx, mod = context(0), driver()
    handle = streams.current_handle(0)
    start, end = mod.Event(ctx, True), mod.Event(ctx, True)
    for _ in range(3):
        fn()
    start.record(handle)
    for _ in range(calls):
        fn()
    end.record(handle)
    end.synchronize()
    return float(end.elapsed_since(start)) * 1e3 / calls


def _wall_us(fn: Callable[[], Any], calls: int) -> float:
    for _ in range(3):
        fn()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) * 1e6 / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    import pygpukit as gp
    from pygpukit.asr import whisper
    from pygpukit.audio import _frames, _fused, spectral

    rng = np.random.default_rng(0)
    y = gp.asarray(rng.standard_normal(16000 * 600).astype(np.float32), device="cuda:0")
    clips = gp.asarray(rng.standard_normal((64, 16000 * 30)).astype(np.float32), device="cuda:0")
    window = gp.asarray(np.hanning(400).astype(np.float32), device="cuda:0")
    flag = gp.zeros((1,), dtype=gp.int32, device="cuda:0")
    n = int(y.shape[-1])
    rows = 1 + n // 160
    frames_600 = gp.empty((rows, 400), dtype=gp.float32, device="cuda:0")
    frames_64 = gp.empty((64, 3000, 400), dtype=gp.float32, device="cuda:0")
    ew = _fused._frames_kernel()
    cases = {
        "frames 600 s, warp per frame": lambda: _frames.launch(
            y, window, frames_600, flag, pad=200, hop=160, mode=0, check=True,
            tail_from=(rows - 1) * 160 + 200),
        "frames 600 s, ElementwiseKernel": lambda: ew(
            y, window, n, 200, 160, 400, rows, 0, 1.0 / 400, 1.0 / rows, flag, 1,
            (rows - 1) * 160 + 200, frames_600),
        "frames 64x30 s reflect, warp per frame": lambda: _frames.launch(
            clips, window, frames_64, flag, pad=200, hop=160, mode=1, check=True,
            tail_from=2999 * 160 + 200),
        "frames 64x30 s reflect, ElementwiseKernel": lambda: ew(
            clips, window, 480000, 200, 160, 400, 3000, 1, 1.0 / 400, 1.0 / 3000, flag, 1,
            2999 * 160 + 200, frames_64),
        "rfft 60001x400 (gp.fft)": lambda: gp.fft.rfft(frames_600),
    }  # fmt: skip
    for name, fn in cases.items():
        print(f"{name:<44} {_device_us(fn, args.calls):9.1f} us device")
    whole = {
        "stft 600 s": lambda: spectral.stft(y, n_fft=400, hop_length=160),
        "melspectrogram 600 s": lambda: spectral.melspectrogram(
            y=y, sr=16000, n_fft=400, hop_length=160, n_mels=80),
        "whisper log-mel 64x30 s": lambda: whisper.log_mel_spectrogram(clips, 80),
    }  # fmt: skip
    for name, fn in whole.items():
        for enabled in (True, False):
            _frames.ENABLED = enabled
            label = "warp per frame" if enabled else "ElementwiseKernel"
            print(f"{name + ', ' + label:<44} {_wall_us(fn, args.calls):9.1f} us a call (wall)")
    _frames.ENABLED = True


if __name__ == "__main__":
    main()
