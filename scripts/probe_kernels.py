"""Kernel timeline of one pygpukit call beside its PyTorch peer, on a GPU: every kernel the
process runs during a few calls (CUPTI through torch.profiler sees ours as well as torch's),
grouped by name: count, device microseconds per call, and the span of a call from its first
kernel's start to its last kernel's end (the gap between the two is idle GPU time).

    python scripts/probe_kernels.py stft mel rfft400 fft-bars decoder-graph whisper-step

Cases: ``stft`` / ``mel`` are the audio benchmark's 600 s rows, ``rfft400`` the fft
family's 3000 x 400 rfft, ``fft-bars`` its 4096 x 1024 rfft and 2^24-point fft,
``decoder-graph`` one replay of the launch family's captured
decoder-like stack, ``whisper-step`` one Whisper-small decode step (cluster attention on
and off when PYGPUKIT_SDPA_CLUSTER is unset).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

CALLS = 5


def timeline(fn: Callable[[], Any], sync: Callable[[], None]) -> list[dict[str, Any]]:
    """The kernels (name, ts, dur in us) of CALLS calls of `fn`, after two untimed ones."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(2):
        fn()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            fn()
            sync()
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    return sorted(kernels, key=lambda e: e["ts"])


def report(title: str, kernels: list[dict[str, Any]]) -> None:
    if not kernels:
        print(f"\n## {title}: no kernels recorded")
        return
    groups: dict[str, list[float]] = {}
    for k in kernels:
        groups.setdefault(k["name"][:90], []).append(float(k["dur"]))
    busy = sum(float(k["dur"]) for k in kernels) / CALLS
    span = (kernels[-1]["ts"] + kernels[-1]["dur"] - kernels[0]["ts"]) / CALLS
    print(f"\n## {title}: {len(kernels) / CALLS:.0f} kernels/call, busy {busy:.1f} us/call, "
          f"span ~{span:.1f} us/call (includes host gaps between calls)")  # fmt: skip
    print(f"{'kernel':<90} {'n/call':>6} {'us/call':>9} {'us each':>8}")
    for name, durs in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
        print(f"{name:<90} {len(durs) / CALLS:>6.1f} {sum(durs) / CALLS:>9.2f} "
              f"{sum(durs) / len(durs):>8.2f}")  # fmt: skip
    starts = [float(k["ts"]) for k in kernels]
    ends = [float(k["ts"]) + float(k["dur"]) for k in kernels]
    gaps = [max(0.0, s - e) for s, e in zip(starts[1:], ends[:-1], strict=True)]
    gaps.sort()
    inner = gaps[: len(gaps) - (CALLS - 1)] if len(gaps) >= CALLS else gaps
    if inner:
        print(f"gaps between kernels inside calls: median {np.median(inner):.2f} us, "
              f"sum {sum(inner) / CALLS:.1f} us/call")  # fmt: skip


def _audio_signal(gp: Any, torch: Any) -> tuple[Any, Any]:
    y = np.random.default_rng(0).standard_normal(600 * 16000).astype(np.float32)
    return gp.asarray(y, device="cuda"), torch.from_numpy(y).cuda()


def case_stft(gp: Any, torch: Any) -> None:
    from pygpukit.audio import bench, spectral

    y, ty = _audio_signal(gp, torch)
    sync = torch.cuda.synchronize
    report("stft ours", timeline(lambda: spectral.stft(y, n_fft=400, hop_length=160), sync))
    report("stft torch", timeline(lambda: bench._torch_stft(torch, ty), sync))


def case_mel(gp: Any, torch: Any) -> None:
    from pygpukit.audio import bench, spectral

    y, ty = _audio_signal(gp, torch)
    sync = torch.cuda.synchronize
    mel = bench._torchaudio_mel(ty.device)
    report("mel ours", timeline(lambda: spectral.melspectrogram(
        y=y, sr=16000, n_fft=400, hop_length=160, n_mels=80), sync))  # fmt: skip
    report("mel torchaudio", timeline(lambda: mel(ty), sync))


def case_rfft400(gp: Any, torch: Any) -> None:
    x = np.random.default_rng(1).standard_normal((3000, 400)).astype(np.float32)
    gx, tx = gp.asarray(x, device="cuda"), torch.from_numpy(x).cuda()
    sync = torch.cuda.synchronize
    report("rfft 3000x400 ours", timeline(lambda: gp.fft.rfft(gx), sync))
    report("rfft 3000x400 torch", timeline(lambda: torch.fft.rfft(tx), sync))


def case_fft_bars(gp: Any, torch: Any) -> None:
    """The fft family's other two bar rows: 4096 x 1024 rfft and one 2^24-point fft (the
    latter's output must be written by cuFFT alone: no copy, memset or scaling kernel)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    z = (rng.standard_normal(1 << 24) + 1j * rng.standard_normal(1 << 24)).astype(np.complex64)
    sync = torch.cuda.synchronize
    for name, a, ours, theirs in (("rfft 4096x1024", x, gp.fft.rfft, torch.fft.rfft),
                                  ("fft 2^24", z, gp.fft.fft, torch.fft.fft)):  # fmt: skip
        ga, ta = gp.asarray(a, device="cuda"), torch.from_numpy(a).cuda()
        report(f"{name} ours", timeline(lambda f=ours, v=ga: f(v), sync))  # type: ignore[misc]
        report(f"{name} torch", timeline(lambda f=theirs, v=ta: f(v), sync))  # type: ignore[misc]


def case_decoder_graph(gp: Any, torch: Any) -> None:
    from pygpukit.benchmark import launch_path as lp

    weights = lp.decoder_weights(gp, lambda a: gp.asarray(a, device="cuda").astype("bfloat16"))
    x = gp.asarray(np.random.default_rng(6).standard_normal((1, lp.HIDDEN)).astype(np.float32),
                   device="cuda").astype("bfloat16")  # fmt: skip
    lp.decoder_step(gp, x, weights)
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        lp.decoder_step(gp, x, weights)
    report(
        f"decoder graph replay ({g.node_count} nodes)", timeline(g.replay, torch.cuda.synchronize)
    )
    report("decoder eager", timeline(lambda: lp.decoder_step(gp, x, weights),
                                     torch.cuda.synchronize))  # fmt: skip


def case_whisper_step(gp: Any, torch: Any) -> None:
    import subprocess
    import sys

    if "PYGPUKIT_SDPA_CLUSTER" not in os.environ:  # both paths, each in its own process
        for flag in ("1", "0"):
            print(f"\n# PYGPUKIT_SDPA_CLUSTER={flag}", flush=True)
            subprocess.run(
                [sys.executable, __file__, "whisper-step"],
                env=dict(os.environ, PYGPUKIT_SDPA_CLUSTER=flag),
                check=False,
            )
        return
    import transformers
    from pygpukit.asr import whisper
    from pygpukit.audio import bench_whisper as bw

    d, layers, heads, n_mels, vocab = bw.SHAPES["small"]
    config = transformers.WhisperConfig(
        vocab_size=vocab, num_mel_bins=n_mels, d_model=d, encoder_layers=layers,
        decoder_layers=layers, encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=4 * d, decoder_ffn_dim=4 * d,
    )  # fmt: skip
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        transformers.WhisperForConditionalGeneration(config).save_pretrained(folder)
        model = whisper.load_whisper_model(folder, "float16", device="cuda", progress=False)
    feats = np.random.default_rng(0).standard_normal((1, n_mels, 3000)).astype(np.float32)
    encoded = model.encode(feats)
    cross = model.cross_cache(encoded)
    cache = model.new_cache(1, len(bw.START) + 200)
    model.decode(np.array([bw.START]), cache, cross, last_only=True)
    token = np.array([[50400]])
    sync = torch.cuda.synchronize
    report("whisper small encode", timeline(lambda: model.encode(feats), sync))
    report(
        "whisper small decode step",
        timeline(lambda: model.decode(token, cache, cross, last_only=True).to_numpy(), sync),
    )


CASES = {"stft": case_stft, "mel": case_mel, "rfft400": case_rfft400,
         "fft-bars": case_fft_bars, "decoder-graph": case_decoder_graph,
         "whisper-step": case_whisper_step}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+", choices=sorted(CASES))
    args = ap.parse_args()
    import pygpukit as gp
    import torch

    for name in args.cases:
        CASES[name](gp, torch)


if __name__ == "__main__":
    main()
