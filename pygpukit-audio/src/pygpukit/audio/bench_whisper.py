"""The audio family's Whisper row: encoder + greedy decode steps beside transformers (GPU).

The model is a random-init transformers WhisperForConditionalGeneration at a released
shape, saved with save_pretrained and loaded by our loader (no download); both sides run
the same weights in the same dtype. Checked by the first decode step's logits.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from pygpukit.benchmark.cases import SpecialCase
from pygpukit.benchmark.results import ERROR, FAIL, MISSING, PASS, PeerResult, Row
from pygpukit.benchmark.timing import Stats

#: (d_model, layers, heads, n_mels, vocab) of the released checkpoints
SHAPES = {
    "tiny": (384, 4, 6, 80, 51865),
    "base": (512, 6, 8, 80, 51865),
    "small": (768, 12, 12, 80, 51865),
    "large-v3": (1280, 32, 20, 128, 51866),
}
#: sot, en, transcribe, notimestamps
START = [50258, 50259, 50360, 50364]
KIND = "audio_whisper"


def whisper_decode_case(size: str, dtype: str, steps: int) -> SpecialCase:
    return SpecialCase("audio", "whisper_decode",
                       f"whisper {size} {dtype}: encoder + {steps} decode steps", KIND,
                       {"size": size, "dtype": dtype, "steps": steps})  # fmt: skip


def run_whisper(case: SpecialCase, bench: Any) -> Row:
    """Time ours and transformers' encoder + decode loop; peers other than torch say none."""
    # float16 through up to 32 layers by two op orders: ~1e-2 apart; a bug is ~1
    row = Row(case.family, case.op, case.case, unit="ms", tol=1e-1)
    if bench.device.type != "cuda":
        row.status, row.note = MISSING, f"a GPU case; this run is on {bench.device}"
        return row
    peer = next((p for p in bench.peers if p.name == "torch" and p.load()), None)
    try:
        import transformers
    except ImportError:
        transformers = None
    if peer is None or transformers is None:
        row.status = MISSING
        row.note = ("needs torch and transformers (the random-init checkpoint is "
                    "transformers'): pip install torch transformers")  # fmt: skip
        return row
    try:
        _run(case, bench, row, peer.xp, transformers)
    except Exception as exc:  # report, don't crash the run
        row.status, row.note = ERROR, f"{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        bench.release()
    return row


def _run(case: SpecialCase, bench: Any, row: Row, torch: Any, transformers: Any) -> None:
    from pygpukit.asr import whisper

    size, dtype, steps = case.params["size"], case.params["dtype"], int(case.params["steps"])
    d, layers, heads, n_mels, vocab = SHAPES[size]
    config = transformers.WhisperConfig(
        vocab_size=vocab, num_mel_bins=n_mels, d_model=d, encoder_layers=layers,
        decoder_layers=layers, encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=4 * d, decoder_ffn_dim=4 * d,
    )  # fmt: skip
    torch.manual_seed(bench.seed)
    ref = transformers.WhisperForConditionalGeneration(config).eval()
    with tempfile.TemporaryDirectory() as folder:
        ref.save_pretrained(folder)
        ours = whisper.load_whisper_model(folder, dtype, device=bench.device, progress=False)
    tdtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    ref = ref.to("cuda", tdtype[dtype])
    rng = np.random.default_rng(bench.seed)
    feats = rng.standard_normal((1, n_mels, 3000)).astype(np.float32)

    def run_ours(n: int) -> Any:
        cross = ours.cross_cache(ours.encode(feats))
        cache = ours.new_cache(1, len(START) + n)
        logits = ours.decode(np.array([START]), cache, cross, last_only=True)
        for _ in range(n):
            token = logits.to_numpy().argmax(-1)[:, None]
            logits = ours.decode(token, cache, cross, last_only=True)
        return logits

    def run_ref(n: int) -> Any:
        with torch.no_grad():
            x = torch.from_numpy(feats).to("cuda", tdtype[dtype])
            enc = ref.model.encoder(x).last_hidden_state
            ids = torch.tensor([START], device="cuda")
            out = ref(encoder_outputs=(enc,), decoder_input_ids=ids, use_cache=True)
            for _ in range(n):
                token = out.logits[:, -1].argmax(-1, keepdim=True)
                out = ref(encoder_outputs=(enc,), decoder_input_ids=token,
                          past_key_values=out.past_key_values, use_cache=True)  # fmt: skip
            return out.logits[:, -1]

    got = np.asarray(run_ours(0).astype("float32").to_numpy(), np.float64).reshape(-1)
    want = run_ref(0).float().cpu().numpy().astype(np.float64).reshape(-1)
    row.error = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    row.provider = "cuda"
    row.stats = _timed(lambda: run_ours(steps), bench.sync)
    row.status = PASS if row.error <= (row.tol or 0) else FAIL
    step = ours._step  # the last run's decode-step binding: graph-replayed or why not
    if step is None:
        how = "eager (no step ran)"
    else:
        how = "graph replays" if step.graph_captured else f"eager ({step.refusal or 'no graph'})"
    row.note = (f"random-init {size} at the released shape; error: first-step logits against "
                f"transformers' (relative L2); ours: decode steps as {how}; torch: "
                "transformers with its KV cache")  # fmt: skip
    result = PeerResult("torch")
    row.peers.append(result)
    result.stats = _timed(lambda: run_ref(steps), torch.cuda.synchronize)
    result.error = 0.0
    result.ratio = result.stats.median_ms / row.stats.median_ms
    for other in bench.peers:  # the NumPy/CuPy peers have no Whisper: say so
        if other.name != "torch":
            row.peers.append(PeerResult(other.name, note=f"no {other.name} equivalent"))


def _timed(fn: Callable[[], Any], sync: Callable[[], Any], samples: int = 3) -> Stats:
    """Median of `samples` whole runs (after one warm-up), each ended by a device sync."""
    fn()
    sync()
    out = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn()
        sync()
        out.append((time.perf_counter() - t0) * 1e3)
    return Stats.of(out)
