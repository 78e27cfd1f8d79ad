"""The cuda FFT fast path on the stub GPU of scripts/stub_cuda.py (no device needed): irfft's
private input is one cuMemcpyAsync into a pool block that cuFFT then reads, and rfft reads
the caller's array directly. Run in a subprocess: the stub replaces process-wide state."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygpukit_cuda._native")

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

_CHECK = r"""
import numpy as np
import profile_fft_host as stubs
stubs.install()
import pygpukit as gp
from pygpukit_cuda import cufft, device

copies, runs = [], []
device._contexts[0].copy_async = lambda dst, src, n, stream: copies.append((dst, src, n))

class Plan(stubs._NoopPlan):
    def __call__(self, stream, inp, out, work, direction):
        runs.append((inp, out))

cufft._lib.plan = lambda *args: Plan()
spec = gp.asarray(np.zeros((4, 9), np.complex64), device="cuda:0")
where = spec._buffer.ptr + spec._offset
for n in (16, 16, 17, 16):
    assert gp.fft.irfft(spec, n=n).shape == (4, n)
assert len(copies) == 4 and len(runs) == 4, (copies, runs)
assert all(src == where and nbytes == spec.nbytes for _, src, nbytes in copies)
assert all(inp == dst != where for (inp, _), (dst, _, _) in zip(runs, copies))
del copies[:], runs[:]
signal = gp.asarray(np.zeros((4, 16), np.float32), device="cuda:0")
for _ in range(2):
    gp.fft.rfft(signal)
assert copies == [] and [inp for inp, _ in runs] == [signal._buffer.ptr + signal._offset] * 2
print("ok")
"""


def test_irfft_copies_once_and_rfft_reads_its_input_on_the_stub_gpu() -> None:
    done = subprocess.run([sys.executable, "-c", _CHECK], cwd=SCRIPTS, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
