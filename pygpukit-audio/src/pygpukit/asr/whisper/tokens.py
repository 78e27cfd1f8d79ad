"""WhisperTokens: the special token ids of one checkpoint (start, end, task, language, timestamps).

They come from generation_config.json where it names them (decoder_start_token_id,
no_timestamps_token_id, lang_to_id, task_to_id, suppress_tokens, ...) and otherwise
from tokenizer.json by their text (``<|startoftranscript|>``, ``<|en|>``, ...).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["WhisperTokens"]

#: a language token: <|en|>, <|haw|>, <|yue|> (two or three lowercase letters)
LANGUAGE_TOKEN = re.compile(r"^<\|([a-z]{2,3})\|>$")
#: seconds per timestamp step: one encoder position is two 10 ms frames
TIME_PRECISION = 0.02


@dataclass(frozen=True)
class WhisperTokens:
    """Every special id the decoding rules use; `None` where the checkpoint lacks one."""

    eot: int
    sot: int
    no_timestamps: int
    transcribe: int | None = None
    translate: int | None = None
    sot_prev: int | None = None
    sot_lm: int | None = None
    no_speech: int | None = None
    languages: dict[str, int] = field(default_factory=dict)  # "en" -> id of <|en|>
    suppress: tuple[int, ...] = ()  # never sampled
    begin_suppress: tuple[int, ...] = ()  # not sampled as the first token
    max_initial_timestamp_index: int | None = 50
    #: whether the decoder is told a language and a task (English-only models are not)
    is_multilingual: bool = True

    @property
    def timestamp_begin(self) -> int:
        """Id of <|0.00|>; id timestamp_begin + i stands for i * 0.02 seconds."""
        return self.no_timestamps + 1

    @property
    def multilingual(self) -> bool:
        return self.is_multilingual and bool(self.languages) and self.transcribe is not None

    def language_of(self, token: int) -> str:
        for code, tid in self.languages.items():
            if tid == token:
                return code
        raise ValueError(f"token {token} is not a language token")

    def language_id(self, language: str) -> int:
        code = language.lower().strip()
        if code.startswith("<|"):
            code = code[2:-2]
        if code not in self.languages:
            known = ", ".join(sorted(self.languages)) or "none: the model is English-only"
            raise ValueError(f"language {language!r} is not one this model knows ({known})")
        return self.languages[code]

    @classmethod
    def from_pretrained(cls, folder: Path, tokenizer: Any, vocab_size: int) -> WhisperTokens:
        """Read generation_config.json (when present) and fill the gaps from the tokenizer."""
        gen: dict[str, Any] = {}
        gen_file = folder / "generation_config.json"
        if gen_file.is_file():
            try:
                gen = json.loads(gen_file.read_text("utf-8"))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{gen_file}: not valid JSON: {exc}") from None

        def by_text(text: str) -> int | None:
            tid = tokenizer.token_to_id(text)
            return tid if tid is not None and tid < vocab_size else None

        def required(key: str, text: str) -> int:
            value = gen.get(key)
            if isinstance(value, list):
                value = value[0] if value else None
            tid = by_text(text) if value is None else int(value)
            if tid is None:
                raise ValueError(
                    f"{folder}: neither generation_config.json ({key}) nor tokenizer.json "
                    f"({text}) gives the id of {text}"
                )
            return tid

        sot = by_text("<|startoftranscript|>")
        if sot is None:
            sot = required("decoder_start_token_id", "<|startoftranscript|>")
        eot = by_text("<|endoftext|>")
        if eot is None:
            eot = required("eos_token_id", "<|endoftext|>")
        no_ts = required("no_timestamps_token_id", "<|notimestamps|>")
        tasks = gen.get("task_to_id") or {}
        languages = {
            m.group(1): int(i) for t, i in (gen.get("lang_to_id") or {}).items()
            if (m := LANGUAGE_TOKEN.match(t))
        }  # fmt: skip
        if not languages:
            for text, tid in tokenizer.backend.get_vocab(with_added_tokens=True).items():
                m = LANGUAGE_TOKEN.match(text)
                if m and sot < tid < vocab_size:
                    languages[m.group(1)] = int(tid)
        languages = dict(sorted(languages.items(), key=lambda kv: kv[1]))
        ids = dict(
            transcribe=tasks.get("transcribe", by_text("<|transcribe|>")),
            translate=tasks.get("translate", by_text("<|translate|>")),
            sot_prev=gen.get("prev_sot_token_id", by_text("<|startofprev|>")),
            sot_lm=by_text("<|startoflm|>"),
            no_speech=by_text("<|nospeech|>") or by_text("<|nocaptions|>"),
        )
        # openai-whisper never samples the task, start and no-speech markers
        suppress = {int(t) for t in gen.get("suppress_tokens") or [] if 0 <= int(t) < vocab_size}
        suppress |= {int(v) for v in ids.values() if v is not None} | {sot}
        blank = gen.get("begin_suppress_tokens")
        if blank is None:
            blank = [*tokenizer.encode(" ", add_special_tokens=False), eot]
        max_initial = gen.get("max_initial_timestamp_index", 50)
        multilingual = gen.get("is_multilingual")
        if multilingual is None:
            # the released English-only vocabularies (51864) still list the language tokens;
            # openai-whisper tells them apart by size. Smaller (test) vocabularies: by tokens
            multilingual = vocab_size >= 51865 if vocab_size >= 51864 else bool(languages)
        return cls(
            eot=eot,
            sot=sot,
            no_timestamps=no_ts,
            languages=languages,
            suppress=tuple(sorted(suppress)),
            begin_suppress=tuple(sorted({int(t) for t in blank if 0 <= int(t) < vocab_size})),
            max_initial_timestamp_index=None if max_initial is None else int(max_initial),
            is_multilingual=bool(multilingual),
            **{k: (None if v is None else int(v)) for k, v in ids.items()},
        )
