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
names = stub_cuda.KERNEL_NAMES

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


# a repeated call is one native FftCall (fft_fresh): the Python kernels are not entered
_SETUP = _CHECK.split("# rfft and fft of contiguous")[0]
_REPEAT_BODY = r"""
from types import SimpleNamespace
from pygpukit._ops import fourier
from pygpukit_cuda import fft_kernels, streams
from pygpukit_cuda import plans as plan_caches

entered = []
real_fast = fft_kernels._fast
fft_kernels._fast = lambda kind, *rest: entered.append(kind) or real_fast(kind, *rest)

# one long signal (the 2^24 row's layout, smaller): cuFFT reads the input and writes the
# output itself; no kernel, no copy, no Python kernel
big = dev((1 << 16,), np.complex64)
k, _, r, c, out = one_call(lambda: gp.fft.fft(big))
assert k == [] and c == [] and r == [(ptr(big), ptr(out))] and entered == ["c2c"], (k, c, r)
assert out.shape == big.shape and out.dtype is gp.complex64 and out.strides == (8,)
entered.clear()
frames = dev((30, 400), np.float32)
z = dev((4, 16), np.complex64)
spec = dev((4, 9), np.complex64)
for fn in (lambda: gp.fft.rfft(frames), lambda: gp.fft.ifft(z, norm="ortho"),
           lambda: gp.fft.irfft(spec, n=16), lambda: gp.fft.rfftn(frames)):
    fn(); fn()
    entered.clear()
    k, _, r, c, out = one_call(fn)
    assert entered == [] and len(r) == 1, (entered, r)

# a view at an odd address declines to the Python path, which copies it (cuFFT refuses it)
rows = dev((2, 33), np.float32)
view = rows[:, 1:]
gp.fft.rfft(view)
entered.clear()
got = gp.fft.rfft(view)
assert entered == ["r2c"] and got.shape == (2, 17), entered

# the FftCall itself: what it declines and what retiring does
key = next(key for key in fourier._decided if key[0] == "rfft" and key[1] == frames.shape)
run = fourier._decided[key][4]
assert run(frames).shape == (3000 // 100, 201)
assert run(rows) is NotImplemented  # another layout
for capture_pool, index in ((object(), 0), (None, 1)):  # capturing; another device's stream
    token = streams._current.set(SimpleNamespace(capture_pool=capture_pool,
                                                 device_index=index, ptr=7))
    try:
        assert run(frames) is NotImplemented
    finally:
        streams._current.reset(token)
plan_caches.forget()  # retires every FftCall: their plans were dropped
assert not run.live and run(frames) is None
entered.clear()
gp.fft.rfft(frames)  # decided again, with a new plan
gp.fft.rfft(frames)
assert entered == ["r2c"], entered
print("ok")
"""
_REPEAT = _SETUP + _REPEAT_BODY


def _run_script(script: str) -> None:
    done = subprocess.run([sys.executable, "-c", script], cwd=SCRIPTS, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_each_transform_enqueues_only_its_cufft_execution_on_the_stub_gpu() -> None:
    _run_script(_CHECK)


def test_a_repeated_call_is_one_native_call_on_the_stub_gpu() -> None:
    _run_script(_REPEAT)
