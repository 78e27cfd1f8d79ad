"""Tokenizer: a model directory's tokenizer.json (through `tokenizers`) and its chat template.

The chat template is the Jinja text in tokenizer_config.json (or chat_template.jinja),
rendered in a sandbox with the variables Hugging Face templates expect (messages,
add_generation_prompt, bos_token, eos_token, raise_exception, ...).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["Tokenizer"]


def _token_text(value: Any) -> str | None:
    """tokenizer_config.json writes special tokens as a string or {"content": ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _raise(message: str) -> None:
    raise ValueError(f"chat template: {message}")


class Tokenizer:
    """Text <-> token ids, plus `apply_chat_template` for chat models."""

    def __init__(
        self,
        backend: Any,
        chat_template: str | None = None,
        special: dict[str, str | None] | None = None,
    ) -> None:
        self.backend = backend
        self.chat_template = chat_template
        self.special = special or {}
        self._compiled: Any = None

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load tokenizer.json (and tokenizer_config.json, if there) from a model directory."""
        from tokenizers import Tokenizer as HFTokenizer

        p = Path(path)
        file = p if p.is_file() else p / "tokenizer.json"
        if not file.is_file():
            raise FileNotFoundError(f"{file}: no tokenizer.json (the HF tokenizers format)")
        try:
            backend = HFTokenizer.from_file(str(file))
        except Exception as exc:  # tokenizers raises its own Exception type
            raise ValueError(f"{file}: not a valid tokenizer.json: {exc}") from None
        folder = file.parent
        template, special = None, {}
        config_file = folder / "tokenizer_config.json"
        if config_file.is_file():
            try:
                cfg = json.loads(config_file.read_text("utf-8"))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{config_file}: not valid JSON: {exc}") from None
            template = cfg.get("chat_template")
            if isinstance(template, list):  # named templates: take "default"
                named = {t.get("name"): t.get("template") for t in template}
                template = named.get("default") or next(iter(named.values()), None)
            for key in ("bos_token", "eos_token", "pad_token", "unk_token"):
                special[key] = _token_text(cfg.get(key))
        jinja_file = folder / "chat_template.jinja"
        if template is None and jinja_file.is_file():
            template = jinja_file.read_text("utf-8")
        return cls(backend, template, special)

    # -- text <-> ids ----------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return int(self.backend.get_vocab_size(with_added_tokens=True))

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(self.backend.encode(text, add_special_tokens=add_special_tokens).ids)

    def encode_batch(
        self, texts: Sequence[str], add_special_tokens: bool = True
    ) -> list[list[int]]:
        encoded = self.backend.encode_batch(list(texts), add_special_tokens=add_special_tokens)
        return [list(e.ids) for e in encoded]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return str(
            self.backend.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)
        )

    def token_to_id(self, token: str) -> int | None:
        value = self.backend.token_to_id(token)
        return None if value is None else int(value)

    @property
    def eos_token_ids(self) -> list[int]:
        """Ids of the tokens that end a reply (eos, and chat end markers the vocab has)."""
        ids = []
        for token in (self.special.get("eos_token"), "<|im_end|>", "<|eot_id|>", "<|endoftext|>"):
            if token and (i := self.token_to_id(token)) is not None and i not in ids:
                ids.append(i)
        return ids

    # -- chat --------------------------------------------------------------------------
    def apply_chat_template(
        self,
        messages: Sequence[dict[str, Any]],
        add_generation_prompt: bool = True,
        **variables: Any,
    ) -> str:
        """The prompt text for `messages` ([{"role": ..., "content": ...}, ...]).

        Extra keyword arguments reach the template (e.g. ``enable_thinking=False`` for
        Qwen3). Without a template, messages are joined as "role: content" lines.
        """
        if self.chat_template is None:
            lines = [f"{m['role']}: {m['content']}" for m in messages]
            return "\n".join(lines) + ("\nassistant:" if add_generation_prompt else "")
        if self._compiled is None:
            from jinja2.ext import loopcontrols
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            env = ImmutableSandboxedEnvironment(
                trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
            )
            env.filters["tojson"] = lambda v, indent=None, **_: json.dumps(
                v, ensure_ascii=False, indent=indent
            )
            env.globals["raise_exception"] = _raise
            env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
            self._compiled = env.from_string(self.chat_template)
        context = {k: v for k, v in self.special.items() if v is not None}
        context.update(variables)
        return str(
            self._compiled.render(
                messages=list(messages), add_generation_prompt=add_generation_prompt, **context
            )
        )
