"""Tokenizer (a BPE trained here with `tokenizers`), chat templates, <think> parsing, CLI."""

from __future__ import annotations

import io
import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pygpukit.llm import ChatSession, Tokenizer, load_model_from_safetensors, split_thinking
from pygpukit.llm.cli import main
from tiny_models import make_checkpoint

SPECIALS = ["<pad>", "<bos>", "<eos>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}"
    "{% endif %}"
)
CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "hello world, hello pygpukit; models run on the cpu and the gpu",
    "a tiny tokenizer for tests: numbers 0123456789 and words",
] * 20


def _train(folder: Path) -> int:
    from tokenizers import Tokenizer as HF
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = HF(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS, trainer)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    config = {
        "chat_template": TEMPLATE,
        "eos_token": "<|im_end|>",
        "bos_token": {"content": "<bos>"},
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return int(tok.get_vocab_size())


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    vocab = _train(tmp_path)
    make_checkpoint(tmp_path, "qwen3", seed=12, vocab_size=vocab)
    return tmp_path


def test_encode_decode_round_trip(model_dir: Path) -> None:
    tok = Tokenizer.from_pretrained(model_dir)
    for text in ("hello world", "the lazy fox 42", "ünïcödé ✓"):
        assert tok.decode(tok.encode(text)) == text
    assert tok.encode_batch(["hello", "world"]) == [tok.encode("hello"), tok.encode("world")]
    assert tok.token_to_id("<|im_end|>") == 4
    assert tok.eos_token_ids == [4]
    assert tok.vocab_size >= 256 + len(SPECIALS)


def test_chat_template_renders(model_dir: Path) -> None:
    tok = Tokenizer.from_pretrained(model_dir)
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert tok.apply_chat_template(msgs) == (
        "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert tok.apply_chat_template(msgs, enable_thinking=False).endswith("<think>\n\n</think>\n\n")
    assert not tok.apply_chat_template(msgs, add_generation_prompt=False).endswith("assistant\n")


def test_template_exceptions_and_missing_files(tmp_path: Path) -> None:
    _train(tmp_path)
    cfg = {"chat_template": "{{ raise_exception('no system role') }}"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"no system role"):
        Tokenizer.from_pretrained(tmp_path).apply_chat_template([{"role": "u", "content": "x"}])
    with pytest.raises(FileNotFoundError, match=r"tokenizer\.json"):
        Tokenizer.from_pretrained(tmp_path / "nowhere")
    (tmp_path / "tokenizer.json").write_text("{]")
    with pytest.raises(ValueError, match=r"not a valid tokenizer\.json"):
        Tokenizer.from_pretrained(tmp_path)


@pytest.mark.parametrize(
    ("text", "thinking", "answer"),
    [
        ("<think>\nplan it\n</think>\n\nThe answer.", "plan it", "The answer."),
        ("plan without the opening tag</think>Done", "plan without the opening tag", "Done"),
        ("<think>still going", "still going", ""),
        ("No thinking here.", "", "No thinking here."),
        ("<think>\n\n</think>\n\nEmpty thoughts", "", "Empty thoughts"),
    ],
)
def test_split_thinking(text: str, thinking: str, answer: str) -> None:
    assert split_thinking(text) == (thinking, answer)


def test_chat_session_keeps_history(model_dir: Path) -> None:
    tok = Tokenizer.from_pretrained(model_dir)
    model = load_model_from_safetensors(model_dir, progress=False)
    chat = ChatSession(model, tok, system="be brief", max_new_tokens=6)
    reply = chat.send("hello")
    assert [m["role"] for m in chat.messages] == ["system", "user", "assistant"]
    assert chat.messages[-1]["content"] == reply.answer
    assert reply.finish_reason in ("stop_token", "length")
    prompt = tok.decode(chat.prompt_ids())
    assert prompt.startswith("<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhello")
    chat.send("again")
    assert len(chat.messages) == 5


def test_stop_strings_and_streamed_text(model_dir: Path) -> None:
    tok = Tokenizer.from_pretrained(model_dir)
    model = load_model_from_safetensors(model_dir, progress=False)
    prompt = tok.encode("hello world")
    events = list(model.stream(prompt, max_new_tokens=12, tokenizer=tok, stop_token_ids=[]))
    new = [e.token_id for e in events]
    assert "".join(e.text for e in events) == tok.decode(new)
    text = tok.decode(new)
    target = text[len(text) // 2 : len(text) // 2 + 1]
    if target.strip():
        out = model.generate(
            prompt, max_new_tokens=12, tokenizer=tok, stop_strings=[target], stop_token_ids=[]
        )
        made = tok.decode(out[len(prompt) :])
        assert target in made and target not in tok.decode(out[len(prompt) : -1])


def _run(argv: list[str], stdin: str = "") -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, stdin=io.StringIO(stdin), stdout=out)
    return code, out.getvalue()


def test_cli_generate_prints_the_greedy_continuation(model_dir: Path) -> None:
    code, text = _run(
        ["generate", str(model_dir), "hello world", "--max-new-tokens", "5", "--quiet"]
    )
    assert code == 0
    tok = Tokenizer.from_pretrained(model_dir)
    model = load_model_from_safetensors(model_dir, progress=False)
    ids = tok.encode("hello world")
    stops = [2, *tok.eos_token_ids]  # config.json's eos and the tokenizer's
    out = model.generate(ids, max_new_tokens=5, stop_token_ids=stops)
    new = out[len(ids) :]
    if new and new[-1] in stops:
        new = new[:-1]
    assert text == "hello world" + tok.decode(new) + "\n"


def test_cli_chat_reads_turns_until_exit(model_dir: Path) -> None:
    code, text = _run(
        ["chat", str(model_dir), "--quiet", "--max-new-tokens", "3", "--no-thinking"],
        stdin="hi there\n\n/exit\n",
    )
    assert code == 0
    assert text.count("> ") == 3 and "CausalTransformerModel(qwen3" in text


def test_cli_reports_errors(tmp_path: Path, capsys: Any) -> None:
    code, _ = _run(["generate", str(tmp_path), "x", "--quiet"])
    assert code == 2
    assert "tokenizer.json" in capsys.readouterr().err


def _successor_model(folder: Path, vocab: int, successor: dict[int, int]) -> None:
    """A real Llama checkpoint whose greedy output is successor[last token]: attention and
    MLP write nothing (zero output projections), the embedding is one-hot, and lm_head
    maps each one-hot row to its successor's logit."""
    from tiny_models import write_safetensors

    hidden = vocab + (-vocab % 4)
    cfg = dict(
        model_type="llama",
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        tie_word_embeddings=False,
        eos_token_id=None,
    )
    eye = np.eye(vocab, hidden, dtype=np.float32)
    head = np.zeros((vocab, hidden), np.float32)
    for token, nxt in successor.items():
        head[nxt, token] = 1.0
    p = "model.layers.0."
    zeros = lambda *s: np.zeros(s, np.float32)  # noqa: E731
    ones = lambda n: np.ones(n, np.float32)  # noqa: E731
    tensors = {
        "model.embed_tokens.weight": eye,
        "model.norm.weight": ones(hidden),
        "lm_head.weight": head,
        p + "input_layernorm.weight": ones(hidden),
        p + "post_attention_layernorm.weight": ones(hidden),
        p + "self_attn.q_proj.weight": zeros(hidden, hidden),
        p + "self_attn.k_proj.weight": zeros(hidden, hidden),
        p + "self_attn.v_proj.weight": zeros(hidden, hidden),
        p + "self_attn.o_proj.weight": zeros(hidden, hidden),
        p + "mlp.gate_proj.weight": zeros(8, hidden),
        p + "mlp.up_proj.weight": zeros(8, hidden),
        p + "mlp.down_proj.weight": zeros(hidden, 8),
    }
    (folder / "config.json").write_text(json.dumps(cfg))
    write_safetensors(folder / "model.safetensors", tensors)


def test_chat_parses_a_thinking_reply(tmp_path: Path) -> None:
    vocab = _train(tmp_path)
    tok = Tokenizer.from_pretrained(tmp_path)
    prompt = tok.encode(
        tok.apply_chat_template([{"role": "user", "content": "hi"}]), add_special_tokens=False
    )
    think, end_think, im_end = (tok.token_to_id(t) for t in ("<think>", "</think>", "<|im_end|>"))
    plan, answer = tok.encode("plan"), tok.encode("done")
    chain = [prompt[-1], think, *plan, end_think, *answer, im_end]
    assert len(set(chain)) == len(chain)  # each token has one successor
    _successor_model(tmp_path, vocab, dict(pairwise(chain)))
    model = load_model_from_safetensors(tmp_path, progress=False)
    chat = ChatSession(model, tok, max_new_tokens=20)
    reply = chat.send("hi")
    assert (reply.thinking, reply.answer, reply.finish_reason) == ("plan", "done", "stop_token")
    assert chat.messages[-1] == {"role": "assistant", "content": "done"}
    code, text = _run(["chat", str(tmp_path), "--quiet"], stdin="hi\n")
    assert code == 0 and "> done\n" in text and "plan" not in text
    code, text = _run(["chat", str(tmp_path), "--quiet", "--show-thinking"], stdin="hi\n")
    assert "<think>plan</think>done" in text
