"""What one stft, melspectrogram and Whisper log-mel call enqueues on the stub GPU of
scripts/stub_cuda.py (no device needed), pinned so an extra pass over the frames is caught:
padding, framing, the window and the input's NaN test are one kernel, |X|^2 one, Whisper's
log tail one after its max, and the one read (the NaN flag) waits for the framing kernel only.
Run in a subprocess: the stub replaces process-wide state."""

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
import stub_cuda
from pygpukit_cuda import cufft, device

ctx = device._contexts[0]
copies, runs, reads = [], [], []
ctx.copy_async = lambda dst, src, n, stream: copies.append(n)
names = stub_cuda.KERNEL_NAMES

class Plan(stubs._NoopPlan):
    def __call__(self, stream, inp, out, work, direction):
        runs.append(1)

cufft._lib.plan = lambda *args: Plan()

from pygpukit_cuda import streams

def download(self, buffer, offset, out):
    reads.append((out.dtype, streams.current_handle(0)))  # each read waits for its stream
    out.fill(1 if out.dtype == bool else 0)  # the NaN test passes, index checks too

device.CudaBackend.download = download

from pygpukit.asr import whisper
from pygpukit.audio import spectral

def one_call(fn):
    fn()
    ctx.launches.clear(); ctx.events.clear(); del copies[:], runs[:], reads[:]
    ctx.record = True
    fn()
    ctx.record = False
    return [names[l[0]] for l in ctx.launches], len(runs), len(copies), len(reads)

# the NaN test rides in the framing kernel; its flag is kept zeroed between calls (no fill),
# and read last, on a side stream that waits for an event recorded after the framing kernel
# only (not for the FFT after it)
FLAG = ["pgk_audio_frames_f32"]
y = gp.asarray(np.ones(16000 * 3, np.float32), device="cuda:0")
got = one_call(lambda: spectral.stft(y, n_fft=400, hop_length=160))
assert got == (FLAG, 1, 0, 1), got

def read_after_framing():
    (record, wait) = ctx.events
    assert record[0] == "record" and record[1] == 0 and wait[0] == "wait", ctx.events
    assert wait[2] == record[2] and wait[1] not in (0, record[1]), ctx.events
    assert [r[1] for r in reads] == [wait[1]], (reads, ctx.events)

read_after_framing()
# the framing kernel is laid out as it is indexed (not the flat ElementwiseKernel, whose
# per-element quotients made the 600 s stft 2.8x slower on the H100): a warp per frame,
# the signal on grid y, and the arguments the kernel reads
import struct
from pygpukit.audio import _frames
(frames,) = [l for l in ctx.launches if names[l[0]] == "pgk_audio_frames_f32"]
assert frames[1] == (-(-301 // _frames.WARPS), 1, 1) and frames[2] == (32, _frames.WARPS, 1)
assert struct.unpack(_frames.ARG_FORMAT, frames[5])[4:] == (48000, 200, 160, 400, 301, 0, 1,
                                                            48200), frames
got = one_call(lambda: spectral.melspectrogram(y=y, sr=16000, n_fft=400, hop_length=160,
                                               n_mels=80))
k = got[0]
# |X|^2 and the mel product in one kernel, a block of 32 frames per launch-grid column
assert k == FLAG + ["pgk_audio_mel_power"] and got[1:] == (1, 0, 1), got
(mel,) = [l for l in ctx.launches if names[l[0]] == "pgk_audio_mel_power"]
assert mel[1] == (-(-301 // 32), 1, 1) and mel[2] == (32, 8, 1) and mel[3] == 32 * 201 * 4, mel
assert struct.unpack("@QQQQqiii", mel[5])[4:] == (301, 201, 80, 201), mel
read_after_framing()
# with the mel kernel off: |X|^2 in one kernel, then the product
from pygpukit.audio import _mel_power
_mel_power.ENABLED = False
got = one_call(lambda: spectral.melspectrogram(y=y, sr=16000, n_fft=400, hop_length=160,
                                               n_mels=80))
_mel_power.ENABLED = True
k = got[0]
assert k[:2] == FLAG + ["pgk_audio_power_c64"], got
assert len(k) == 3 and "gemm" in k[2] and got[1:] == (1, 0, 1), got
read_after_framing()
# reflect padding too is done by the framing kernel (no gathers, which each read a flag)
clips = gp.asarray(np.ones((2, 16000 * 30), np.float32), device="cuda:0")
got = one_call(lambda: whisper.log_mel_spectrogram(clips, 80))
(frames,) = [l for l in ctx.launches if names[l[0]] == "pgk_audio_frames_f32"]
assert frames[1] == (375, 2, 1), frames[1]  # 3000 frames of 2 clips
k = got[0]
assert k[:2] == FLAG + ["pgk_audio_mel_power"], got
assert k[-1] == "pgk_ew_pgk_audio_whisper_log_0", got
assert all(name.startswith("pgk_red_max_float32") for name in k[2:-1]) and len(k) <= 5, got
assert got[1:] == (1, 0, 1), got
read_after_framing()
# the flag is what raises: a set flag (the stub reads every int32 as 1) names the input
device.CudaBackend.download = lambda self, buffer, offset, out: out.fill(1)
for call, text in ((lambda: spectral.stft(y, n_fft=400, hop_length=160), "stft: y contains"),
                   (lambda: whisper.log_mel_spectrogram(clips, 80),
                    "log_mel_spectrogram: audio contains")):
    try:
        call()
    except ValueError as exc:
        assert text in str(exc), exc
    else:
        raise AssertionError("a set NaN flag did not raise")
# a flag seen set is zeroed (one tiny fill) before the next call's framing kernel, which
# then passes
device.CudaBackend.download = download
got = one_call(lambda: spectral.stft(y, n_fft=400, hop_length=160))
assert got[0] == ["pgk_audio_frames_f32"], got  # (one_call's first call zeroed it)
device.CudaBackend.download = lambda self, buffer, offset, out: out.fill(1)
try:
    spectral.stft(y, n_fft=400, hop_length=160)
except ValueError:
    pass
device.CudaBackend.download = download
ctx.launches.clear(); ctx.record = True
spectral.stft(y, n_fft=400, hop_length=160)
ctx.record = False
assert [names[l[0]] for l in ctx.launches] == ["pgk_copy_int32", "pgk_audio_frames_f32"]
print("ok")
"""


def test_spectral_paths_enqueue_fused_kernels_on_the_stub_gpu() -> None:
    done = subprocess.run([sys.executable, "-c", _CHECK], cwd=SCRIPTS, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
