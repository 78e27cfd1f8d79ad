"""The `transcribe` command of `python -m pygpukit.audio` and its output formats."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any, TextIO

from .transcribe import Transcription

__all__ = ["add_transcribe_command", "format_transcription", "run_transcribe"]

FORMATS = ("text", "plain", "srt", "vtt", "json")


def add_transcribe_command(sub: Any) -> None:
    p = sub.add_parser("transcribe", help="speech to text with a Whisper model folder")
    p.add_argument(
        "audio", nargs="+", help="audio file(s), any rate soundfile reads; mono or mixed"
    )
    p.add_argument("--model", required=True, help="Whisper folder (config.json, model.safetensors, "
                   "tokenizer.json, generation_config.json)")  # fmt: skip
    p.add_argument("--language", default=None, help="e.g. en, de (default: detect)")
    p.add_argument("--task", choices=("transcribe", "translate"), default="transcribe")
    p.add_argument("--beam-size", type=int, default=None, help="beam search (default: greedy)")
    p.add_argument("--patience", type=float, default=1.0)
    p.add_argument("--temperature", type=float, default=None,
                   help="one temperature instead of the 0.0..1.0 fallback ladder")  # fmt: skip
    p.add_argument("--without-timestamps", action="store_true")
    p.add_argument("--no-condition", action="store_true",
                   help="do not feed each window the previous window's text")  # fmt: skip
    p.add_argument("--initial-prompt", default=None)
    p.add_argument("--format", choices=FORMATS, default="text", dest="output_format")
    p.add_argument("--dtype", default=None, help="float32, float16 or bfloat16 (default: stored)")
    p.add_argument("--device", default=None, help="e.g. cpu or cuda:0 (default: pygpukit's)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def _clock(seconds: float, sep: str) -> str:
    ms = round(seconds * 1000)
    h, ms = divmod(ms, 3_600_000)
    m, ms = divmod(ms, 60_000)
    s, ms = divmod(ms, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def format_transcription(result: Transcription, fmt: str) -> str:
    """The result as text lines, SubRip, WebVTT, JSON or plain text."""
    segs = result.segments
    if fmt == "plain":
        return result.text.strip() + "\n"
    if fmt == "json":
        return json.dumps(asdict(result), ensure_ascii=False, indent=1) + "\n"
    if fmt == "srt":
        blocks = [
            f"{i + 1}\n{_clock(s.start, ',')} --> {_clock(s.end, ',')}\n{s.text.strip()}\n"
            for i, s in enumerate(segs)
        ]
        return "\n".join(blocks)
    if fmt == "vtt":
        cues = [
            f"{_clock(s.start, '.')} --> {_clock(s.end, '.')}\n{s.text.strip()}\n" for s in segs
        ]
        return "WEBVTT\n\n" + "\n".join(cues)
    lines = [f"[{_clock(s.start, '.')} --> {_clock(s.end, '.')}] {s.text.strip()}" for s in segs]
    return "\n".join(lines) + ("\n" if lines else "")


def run_transcribe(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from .pipeline import load

    out = out or sys.stdout
    model = load(args.model, args.dtype, device=args.device, progress=not args.quiet)
    temps = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0) if args.temperature is None else (args.temperature,)
    for path in args.audio:
        result = model.transcribe(
            path, language=args.language, task=args.task, beam_size=args.beam_size,
            patience=args.patience, temperature=temps,
            without_timestamps=args.without_timestamps,
            condition_on_previous_text=not args.no_condition,
            initial_prompt=args.initial_prompt, progress=not args.quiet,
        )  # fmt: skip
        if len(args.audio) > 1 and args.output_format in ("text", "plain"):
            out.write(f"== {path} ({result.language}) ==\n")
        out.write(format_transcription(result, args.output_format))
        out.flush()
    return 0
