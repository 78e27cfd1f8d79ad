"""Whisper speed beside PyTorch in one process: log-mel of a batch of 30 s clips (against
openai-whisper's torch.stft formula and torchaudio's MelSpectrogram), and the encoder plus
64 greedy decode steps (against transformers' WhisperForConditionalGeneration with its KV
cache). Models are random-init at the released shapes (no downloads); wall-clock median
of several repeats, each ended by a device sync; ratio = peer time / our time (>1: faster).

    python scripts/bench_whisper.py --device cuda --model-size large-v3 --clips 64
    python scripts/bench_whisper.py --device cpu --model-size tiny --clips 4 --steps 16
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit.asr import whisper

#: (d_model, layers, heads, n_mels, vocab) of the released checkpoints
SHAPES = {
    "tiny": (384, 4, 6, 80, 51865),
    "base": (512, 6, 8, 80, 51865),
    "small": (768, 12, 12, 80, 51865),
    "medium": (1024, 24, 16, 80, 51865),
    "large-v3": (1280, 32, 20, 128, 51866),
}


def median_seconds(fn: Callable[[], Any], sync: Callable[[Any], None], repeats: int) -> float:
    sync(fn())  # warm-up: compiles kernels, fills caches
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        sync(fn())
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _sync_ours(x: Any) -> None:
    if isinstance(x, gp.GPUArray):
        x.to_numpy()


def log_mel_rows(args: argparse.Namespace, torch: Any) -> list[tuple[str, float, float | None]]:
    rng = np.random.default_rng(0)
    clips = (0.1 * rng.standard_normal((args.clips, whisper.N_SAMPLES))).astype(np.float32)
    ours_in = gp.from_numpy(clips, args.device)
    n_mels = SHAPES[args.model_size][3]
    ours = median_seconds(lambda: whisper.log_mel_spectrogram(ours_in, n_mels), _sync_ours,
                          args.repeats)  # fmt: skip
    rows: list[tuple[str, float, float | None]] = []
    if torch is None:
        return [(f"log-mel {n_mels}, {args.clips} x 30 s", ours, None)]
    dev = "cuda" if args.device.startswith("cuda") else "cpu"
    audio = torch.from_numpy(clips).to(dev)
    window = torch.hann_window(400, device=dev)
    bank = torch.from_numpy(whisper.mel_filters(n_mels).copy()).to(dev)

    def openai_formula() -> Any:
        spec = torch.stft(audio, 400, 160, window=window, return_complex=True)
        logs = torch.clamp(bank @ spec[..., :-1].abs() ** 2, min=1e-10).log10()
        peak = logs.amax(dim=(-2, -1), keepdim=True)
        return (torch.maximum(logs, peak - 8.0) + 4.0) / 4.0

    def sync(_: Any) -> None:
        if dev == "cuda":
            torch.cuda.synchronize()

    rows.append((f"log-mel {n_mels} vs torch.stft formula, {args.clips} x 30 s", ours,
                 median_seconds(openai_formula, sync, args.repeats)))  # fmt: skip
    try:
        import torchaudio

        mel = torchaudio.transforms.MelSpectrogram(16000, n_fft=400, hop_length=160,
                                                   n_mels=n_mels, norm="slaney",
                                                   mel_scale="slaney").to(dev)  # fmt: skip
        rows.append((f"log-mel {n_mels} vs torchaudio MelSpectrogram (power only)", ours,
                     median_seconds(lambda: mel(audio), sync, args.repeats)))  # fmt: skip
    except ImportError:
        pass
    return rows


def decode_rows(args: argparse.Namespace, torch: Any) -> list[tuple[str, float, float | None]]:
    import transformers

    d, layers, heads, n_mels, vocab = SHAPES[args.model_size]
    config = transformers.WhisperConfig(
        vocab_size=vocab, num_mel_bins=n_mels, d_model=d, encoder_layers=layers,
        decoder_layers=layers, encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=4 * d, decoder_ffn_dim=4 * d,
    )  # fmt: skip
    ref = transformers.WhisperForConditionalGeneration(config).eval()
    with tempfile.TemporaryDirectory() as folder:
        ref.save_pretrained(folder)
        ours = whisper.load_whisper_model(folder, args.dtype, device=args.device, progress=False)
    dev = "cuda" if args.device.startswith("cuda") else "cpu"
    dtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    ref = ref.to(dev, dtype[args.dtype])
    feats = np.random.default_rng(1).standard_normal((1, n_mels, 3000)).astype(np.float32)
    start = [50258, 50259, 50360, 50364]  # sot, en, transcribe, notimestamps

    def run_ours() -> Any:
        cross = ours.cross_cache(ours.encode(feats))
        cache = ours.new_cache(1, len(start) + args.steps)
        logits = ours.decode(np.array([start]), cache, cross, last_only=True)
        for _ in range(args.steps):
            token = logits.to_numpy().argmax(-1)[:, None]
            logits = ours.decode(token, cache, cross, last_only=True)
        return logits

    def run_ref() -> Any:
        with torch.no_grad():
            x = torch.from_numpy(feats).to(dev, dtype[args.dtype])
            enc = ref.model.encoder(x).last_hidden_state
            ids = torch.tensor([start], device=dev)
            out = ref(encoder_outputs=(enc,), decoder_input_ids=ids, use_cache=True)
            for _ in range(args.steps):
                token = out.logits[:, -1].argmax(-1, keepdim=True)
                out = ref(encoder_outputs=(enc,), decoder_input_ids=token,
                          past_key_values=out.past_key_values, use_cache=True)  # fmt: skip
            return out.logits

    def sync(_: Any) -> None:
        if dev == "cuda":
            torch.cuda.synchronize()

    label = f"whisper {args.model_size} {args.dtype}: encoder + {args.steps} decode steps"
    return [(label, median_seconds(run_ours, _sync_ours, args.repeats),
             median_seconds(run_ref, sync, args.repeats))]  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--model-size", choices=sorted(SHAPES), default="large-v3")
    p.add_argument("--dtype", choices=("float32", "float16", "bfloat16"), default="float16")
    p.add_argument("--clips", type=int, default=64)
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--skip-model", action="store_true", help="log-mel rows only")
    args = p.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    rows = log_mel_rows(args, torch)
    if torch is not None and not args.skip_model:
        rows += decode_rows(args, torch)
    print(f"| case ({args.device}) | pygpukit ms | peer ms | peer / pygpukit |")
    print("|---|---:|---:|---:|")
    for label, ours, peer in rows:
        ratio = f"{peer / ours:.2f}" if peer else "-"
        peer_ms = f"{peer * 1e3:.2f}" if peer else "-"
        print(f"| {label} | {ours * 1e3:.2f} | {peer_ms} | {ratio} |")


if __name__ == "__main__":
    main()
