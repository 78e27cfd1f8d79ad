"""The cuda FFT fast path on the stub GPU of scripts/stub_cuda.py (no device needed): what one
call of each transform enqueues — kernels, cuFFT executions, device copies — pinned, so an
extra pass over the data is caught. Run in a subprocess: the stub replaces process-wide
state."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygpukit_cuda._native")

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

_CHECK = r"""
import struct
import numpy as np
import profile_fft_host as stubs
stubs.install()
import pygpukit as gp
import stub_cuda
from pygpukit_cuda import cufft, device

ctx = device._contexts[0]
copies, runs, plans = [], [], []
ctx.copy_async = lambda dst, src, n, stream: copies.append((dst, src, n))
names = {}

def function(self, name):
    names[hash(name) & 0xFFFF] = name
    return hash(name) & 0xFFFF

stub_cuda.StubModule.function = function

class Plan(stubs._NoopPlan):
    def __call__(self, stream, inp, out, work, direction):
        runs.append((inp, out))

def plan(context, fft_type, n, inembed, istride, idist, onembed, ostride, odist, batch):
    plans.append((fft_type, n, inembed, onembed, batch))
    return Plan()

cufft._lib.plan = plan

def ptr(a):
    return a._buffer.ptr + a._offset

def one_call(fn):
    '''(kernel names, launches, cuFFT runs, copies) of the second call of fn.'''
    fn()
    ctx.launches.clear(); del copies[:], runs[:]
    ctx.record = True
    out = fn()
    ctx.record = False
    return [names[l[0]] for l in ctx.launches], list(ctx.launches), list(runs), list(copies), out

def dev(shape, dtype):
    return gp.asarray(np.zeros(shape, dtype), device="cuda:0")

# rfft and fft of contiguous arrays: the cuFFT execution alone, reading the input itself
signal = dev((4, 16), np.float32)
for fn in (lambda: gp.fft.rfft(signal), lambda: gp.fft.fft(signal.astype(gp.complex64))):
    k, _, r, c, out = one_call(fn)
frames = dev((30, 400), np.float32)
for x in (signal, frames):
    k, _, r, c, out = one_call(lambda: gp.fft.rfft(x))
    assert k == [] and c == [] and r == [(ptr(x), ptr(out))], (k, c, r)
z = dev((4, 16), np.complex64)
k, _, r, c, out = one_call(lambda: gp.fft.fft(z))
assert k == [] and c == [] and r == [(ptr(z), ptr(out))], (k, c, r)
# ifft scales its output: one scaling kernel
k, _, r, c, out = one_call(lambda: gp.fft.ifft(z))
assert k == ["pgk_fft_scale_f32"] and c == [] and len(r) == 1, (k, c, r)

# contiguous operands are planned with cuFFT's basic layout (no embeddings), as torch does
assert plans and all(p[2] == [] and p[3] == [] for p in plans), plans

# irfft: cuFFT's c2r overwrites its input, so it reads a private copy of the caller's array;
# the 1/n of the backward norm is applied in that copy (one kernel), not to the output
spec = dev((4, 9), np.complex64)
for n in (16, 17):
    k, launches, r, c, out = one_call(lambda: gp.fft.irfft(spec, n=n))
    assert out.shape == (4, n) and k == ["pgk_fft_scaled_copy_f32"] and c == [], (k, c)
    dst, src, count, scale = struct.unpack("@QQqf", launches[0][5])
    assert src == ptr(spec) and count == 2 * spec.size and abs(scale - 1 / n) < 1e-9
    assert r == [(dst, ptr(out))] and dst != ptr(spec), (r, dst)
# with no scale (norm="forward") the private copy is one cuMemcpyAsync and no kernel
k, _, r, c, out = one_call(lambda: gp.fft.irfft(spec, n=16, norm="forward"))
assert k == [] and len(c) == 1 and c[0][1] == ptr(spec) and c[0][2] == spec.nbytes, (k, c)
assert r == [(c[0][0], ptr(out))], r
print("ok")
"""


def test_each_transform_enqueues_only_its_cufft_execution_on_the_stub_gpu() -> None:
    done = subprocess.run([sys.executable, "-c", _CHECK], cwd=SCRIPTS, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
