"""A tour of pygpukit.audio: synthesize a clip, analyse it, write and read it back.

Run: python pygpukit-audio/examples/audio_tour.py [--device cuda] [--out DIR]
Without --device it runs on the CPU backend; --device cuda puts the signal on the GPU
(each function then answers on the GPU; needs the cuda backend's FFT kernels).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pygpukit as gp
import pygpukit.audio as librosa  # the only line a librosa script changes


def synthesize(sr: int) -> np.ndarray:
    """Half a second of silence, a 220 Hz tone with clicks, then a rising chirp."""
    t = np.arange(sr) / sr
    tone = 0.4 * np.sin(2 * np.pi * 220.0 * t)
    tone[:: sr // 4] += 0.8
    chirp = 0.4 * np.sin(2 * np.pi * (200.0 * t + 600.0 * t**2))
    return np.concatenate([np.zeros(sr // 2), tone, chirp]).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="e.g. cuda (default: NumPy on the CPU)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the WAV file")
    args = parser.parse_args()
    sr = 16000
    samples = synthesize(sr)
    y = samples if args.device is None else gp.from_numpy(samples, args.device)

    def host(x: object) -> np.ndarray:
        return x.to_numpy() if isinstance(x, gp.GPUArray) else np.asarray(x)

    spec = librosa.stft(y, n_fft=400, hop_length=160)
    mel = librosa.feature.melspectrogram(y=y, sr=sr, n_fft=400, hop_length=160, n_mels=80)
    log_mel = librosa.power_to_db(mel, ref=np.max)
    mfcc = librosa.feature.mfcc(S=log_mel, n_mfcc=13)
    f0 = host(librosa.yin(y, fmin=80.0, fmax=1000.0, sr=sr, frame_length=1024))
    onsets = host(librosa.onset.onset_detect(y=y, sr=sr, units="time"))
    speech = host(librosa.effects.energy_vad(y, top_db=30, frame_length=400, hop_length=160))
    print(f"STFT {tuple(spec.shape)} {spec.dtype}, log-mel {tuple(log_mel.shape)}, "
          f"MFCC {tuple(mfcc.shape)}")  # fmt: skip
    tone_f0 = f0[(f0 > 150) & (f0 < 300)]
    print(f"YIN on the tone: median f0 {np.median(tone_f0):.1f} Hz (220 Hz synthesized)")
    print(f"onsets at {np.round(onsets, 3).tolist()} s")
    print(f"energy VAD: {int(speech.sum())} of {speech.size} frames active")

    slower = librosa.effects.time_stretch(y, rate=0.8)
    higher = librosa.effects.pitch_shift(y, sr=sr, n_steps=12)
    print(f"time_stretch(0.8): {host(slower).size} samples; pitch_shift(+12): {host(higher).size}")

    stream = librosa.StreamingSTFT(n_fft=400, hop_length=160)
    chunks = [stream.push(samples[i : i + 512]) for i in range(0, samples.size, 512)]
    live = np.concatenate([host(c) for c in chunks] + [host(stream.flush())], axis=-1)
    same = np.array_equal(live, host(librosa.stft(samples, n_fft=400, hop_length=160)))
    print(f"streaming STFT over 512-sample chunks equals the offline STFT: {same}")

    folder = args.out or Path(tempfile.mkdtemp())
    path = folder / "tour.wav"
    librosa.save(path, host(y), sr)
    back, rate = librosa.load(path, sr=8000)
    print(f"wrote {path}; read back at {rate} Hz: {back.size} samples")


if __name__ == "__main__":
    main()
