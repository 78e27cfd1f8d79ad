"""ChatSession: a multi-turn conversation with a model, and Qwen3 `<think>` block parsing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .generation import GenerationConfig, StreamEvent
from .model import CausalTransformerModel
from .tokenizer import Tokenizer

__all__ = ["ChatSession", "ChatReply", "split_thinking"]

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def split_thinking(text: str) -> tuple[str, str]:
    """(thinking, answer) of a reply that may hold a ``<think>...</think>`` block.

    The opening tag may be missing (the prompt can open the block); a block that never
    closes is all thinking so far.
    """
    head, closed, tail = text.partition(THINK_CLOSE)
    if closed:
        thinking = head.split(THINK_OPEN, 1)[-1]
        return thinking.strip(), tail.strip()
    stripped = text.lstrip()
    if stripped.startswith(THINK_OPEN):
        return stripped[len(THINK_OPEN) :].strip(), ""
    return "", text.strip()


@dataclass(frozen=True)
class ChatReply:
    """One assistant turn: the answer, the thinking (if any) and the raw text."""

    answer: str
    thinking: str
    text: str
    finish_reason: str | None


class ChatSession:
    """Keeps the conversation, renders it with the chat template, streams replies."""

    def __init__(
        self,
        model: CausalTransformerModel,
        tokenizer: Tokenizer,
        system: str | None = None,
        **generation: Any,
    ) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.messages: list[dict[str, str]] = []
        if system:
            self.messages.append({"role": "system", "content": system})
        stop = tokenizer.eos_token_ids or None
        generation.setdefault("max_new_tokens", 256)
        self.config = GenerationConfig.build(
            None, {"stop_token_ids": stop, **generation, "tokenizer": tokenizer}
        )
        self.template_variables: dict[str, Any] = {}

    def prompt_ids(self) -> list[int]:
        text = self.tokenizer.apply_chat_template(
            self.messages, add_generation_prompt=True, **self.template_variables
        )
        # the template already wrote the special tokens it wants
        return self.tokenizer.encode(text, add_special_tokens=False)

    def stream(self, user_text: str) -> Iterator[StreamEvent]:
        """Add the user's turn and yield the reply's tokens; the reply joins the history."""
        self.messages.append({"role": "user", "content": user_text})
        generated: list[int] = []
        reason = None
        for event in self.model.stream(self.prompt_ids(), self.config):
            generated.append(event.token_id)
            reason = event.finish_reason
            yield event
        if reason == "stop_token":
            generated = generated[:-1]
        # keep special tokens: <think> may be one, and split_thinking needs it
        text = self.tokenizer.decode(generated)
        thinking, answer = split_thinking(text)
        self.messages.append({"role": "assistant", "content": answer})
        self.last_reply = ChatReply(answer, thinking, text, reason)

    def send(self, user_text: str) -> ChatReply:
        """Add the user's turn and return the whole reply."""
        for _ in self.stream(user_text):
            pass
        return self.last_reply
