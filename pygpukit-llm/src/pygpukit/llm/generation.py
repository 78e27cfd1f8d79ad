"""Decoding loops: batched `generate` and the streaming iterator, over a preallocated cache.

A batch of prompts of different lengths is left-padded into one (batch, longest) array
with an attention mask, so every decode step feeds one token per row. Rows that have
met a stop token or stop string keep stepping (their token is ignored) until all stop.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from .device_sampling import sample_on_device
from .sampling import SamplingParams, choose_tokens
from .static_decode import StaticDecoder

if TYPE_CHECKING:
    from .model import CausalTransformerModel

__all__ = ["GenerationConfig", "StreamEvent", "generate", "stream"]


@dataclass
class GenerationConfig:
    """Everything one call to `generate` or `stream` may be told."""

    max_new_tokens: int = 32
    do_sample: bool | None = None  # None: sample when any sampling knob is set
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    seed: int | None = None
    stop_token_ids: Sequence[int] | None = None  # None: the model's eos_token_id
    stop_strings: Sequence[str] = ()
    tokenizer: Any = None  # decodes tokens for stop_strings and streamed text
    pad_token_id: int | None = None
    #: decode through a StaticDecoder replayed from a CUDA graph; None: on CUDA devices
    #: (models it cannot capture run the same static step eagerly), False: the eager path
    use_graph: bool | None = None
    #: with the static decoder, draw samples on the device (float32; see device_sampling)
    #: instead of copying the logits to the host; None: on CUDA devices
    sample_on_device: bool | None = None

    @classmethod
    def build(cls, config: GenerationConfig | None, options: dict[str, Any]) -> GenerationConfig:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise TypeError(
                f"generate: unknown option(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(names))})"
            )
        base = {f.name: getattr(config, f.name) for f in fields(cls)} if config else {}
        return cls(**{**base, **options})

    def sampling(self) -> SamplingParams:
        sample = self.do_sample
        if sample is None:
            sample = (
                self.temperature != 1.0 or self.top_k > 0 or self.top_p < 1.0 or self.min_p > 0.0
            )
        return SamplingParams(
            bool(sample),
            self.temperature,
            self.top_k,
            self.top_p,
            self.min_p,
            self.repetition_penalty,
        )


@dataclass(frozen=True)
class StreamEvent:
    """One streamed token: its id, the text it completes (may be ""), and why it stopped."""

    token_id: int
    text: str = ""
    finish_reason: str | None = None  # "stop_token", "stop_string", "length" or None


def _as_rows(input_ids: Any) -> tuple[list[list[int]], bool]:
    """Prompts as lists of ids, and whether the caller gave a batch."""
    if hasattr(input_ids, "to_numpy"):
        input_ids = input_ids.to_numpy()
    arr = input_ids.tolist() if isinstance(input_ids, np.ndarray) else list(input_ids)
    if arr and isinstance(arr[0], (list, tuple, np.ndarray)):
        rows = [[int(t) for t in row] for row in arr]
        batched = True
    else:
        rows, batched = [[int(t) for t in arr]], False
    if not rows or any(len(r) == 0 for r in rows):
        raise ValueError("generate: every prompt needs at least one token id")
    return rows, batched


class _Stopper:
    """Tracks one row's stop conditions."""

    def __init__(self, cfg: GenerationConfig, stop_ids: set[int]) -> None:
        self.cfg, self.stop_ids = cfg, stop_ids
        if cfg.stop_strings and cfg.tokenizer is None:
            raise ValueError("generate: stop_strings need tokenizer= to decode the tokens")

    def reason(self, generated: list[int]) -> str | None:
        if generated[-1] in self.stop_ids:
            return "stop_token"
        if self.cfg.stop_strings:
            text = self.cfg.tokenizer.decode(generated[-64:])
            if any(s in text for s in self.cfg.stop_strings):
                return "stop_string"
        return None


def _decode_steps(
    model: CausalTransformerModel, rows: list[list[int]], cfg: GenerationConfig
) -> Iterator[tuple[np.ndarray, list[str | None]]]:
    """Yield (chosen tokens per row, finish reason per row or None) after every step."""
    if cfg.max_new_tokens < 0:
        raise ValueError(f"generate: max_new_tokens must be >= 0, got {cfg.max_new_tokens}")
    if cfg.max_new_tokens == 0:
        return
    params = cfg.sampling()
    stop_ids = set(model.config.eos_token_id if cfg.stop_token_ids is None else cfg.stop_token_ids)
    stopper = _Stopper(cfg, stop_ids)
    rng = np.random.default_rng(cfg.seed)
    batch, longest = len(rows), max(len(r) for r in rows)
    pad = cfg.pad_token_id if cfg.pad_token_id is not None else model.config.pad_token_id or 0
    ids = np.full((batch, longest), pad, dtype=np.int64)
    mask = np.zeros((batch, longest), dtype=bool)
    for b, row in enumerate(rows):
        ids[b, longest - len(row) :] = row
        mask[b, longest - len(row) :] = True
    cache = model.new_cache(batch, longest + cfg.max_new_tokens)
    logits = model(ids, cache, mask, last_only=True).to_numpy()
    decoder = _static_decoder(model, cache, cfg)
    # greedy without penalties: the device chooses and feeds back; the host reads the ids
    on_device = decoder is not None and not params.do_sample and params.repetition_penalty == 1
    device_draws = (
        decoder is not None
        and params.do_sample
        and params.repetition_penalty == 1
        and (cfg.sample_on_device or (cfg.sample_on_device is None and model.device.type == "cuda"))
    )
    chosen: Any = None
    seen = [np.asarray(r, dtype=np.int64) for r in rows]
    generated: list[list[int]] = [[] for _ in rows]
    done: list[str | None] = [None] * batch
    for step in range(cfg.max_new_tokens):
        if chosen is not None:
            tokens = chosen.to_numpy().astype(np.int64)
        else:
            tokens = choose_tokens(logits, params, rng, seen)
        reasons: list[str | None] = [None] * batch
        for b in range(batch):
            if done[b] is not None:
                tokens[b] = pad
                continue
            generated[b].append(int(tokens[b]))
            seen[b] = np.append(seen[b], tokens[b])
            reasons[b] = stopper.reason(generated[b])
            if reasons[b] is None and step == cfg.max_new_tokens - 1:
                reasons[b] = "length"
        yield tokens.copy(), reasons
        done = [d if d is not None else r for d, r in zip(done, reasons, strict=True)]
        if all(d is not None for d in done):
            return
        if decoder is None:
            logits = model(tokens[:, None], cache, last_only=True).to_numpy()
        elif on_device:
            chosen = decoder.step(tokens if step == 0 else None)[1]
        elif device_draws:
            chosen = sample_on_device(decoder.step(tokens)[0], params, rng)
        else:
            logits = decoder.step(tokens)[0].to_numpy()


def _static_decoder(
    model: CausalTransformerModel, cache: Any, cfg: GenerationConfig
) -> StaticDecoder | None:
    """The StaticDecoder `cfg.use_graph` asks for, or None for the eager path."""
    if cfg.use_graph is False or (cfg.use_graph is None and model.device.type != "cuda"):
        return None
    scaling = model.config.rope_scaling or {}
    if scaling.get("rope_type", scaling.get("type")) == "dynamic":
        return None  # its tables change with the length: the eager path recomputes them
    return StaticDecoder(model, cache, use_graph=True)


def generate(
    model: CausalTransformerModel,
    input_ids: Any,
    config: GenerationConfig | None = None,
    **options: Any,
) -> Any:
    """Prompt(s) plus generated ids: a list for one prompt, a list of lists for a batch.

    A row's output ends with its stop token (or the token that completed a stop string).
    """
    cfg = GenerationConfig.build(config, options)
    rows, batched = _as_rows(input_ids)
    out = [list(r) for r in rows]
    finished = [False] * len(rows)
    for tokens, reasons in _decode_steps(model, rows, cfg):
        for b, reason in enumerate(reasons):
            if finished[b]:
                continue
            out[b].append(int(tokens[b]))
            finished[b] = reason is not None
    return out if batched else out[0]


def stream(
    model: CausalTransformerModel,
    input_ids: Sequence[int],
    config: GenerationConfig | None = None,
    **options: Any,
) -> Iterator[StreamEvent]:
    """Yield one StreamEvent per new token of a single prompt, as soon as it is chosen.

    With a tokenizer, `text` is the newly completed text: bytes of a character split over
    several tokens are held back until the character is whole, and a stop token adds no
    text of its own (the last event flushes whatever was held back).
    """
    cfg = GenerationConfig.build(config, options)
    rows, batched = _as_rows(input_ids)
    if batched and len(rows) != 1:
        raise ValueError("stream: give one prompt (use generate for a batch)")
    generated: list[int] = []
    emitted = ""
    for tokens, reasons in _decode_steps(model, rows, cfg):
        token = int(tokens[0])
        generated.append(token)
        text = ""
        if cfg.tokenizer is not None:
            shown = generated[:-1] if reasons[0] == "stop_token" else generated
            full = cfg.tokenizer.decode(shown)
            # a trailing U+FFFD may be a character whose bytes are still coming: wait,
            # unless this is the last token
            if not full.endswith("\ufffd") or reasons[0] is not None:
                text, emitted = full[len(emitted) :], full
        yield StreamEvent(token, text, reasons[0])
