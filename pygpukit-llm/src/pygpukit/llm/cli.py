"""The command line: `python -m pygpukit.llm generate MODEL_DIR "prompt"` and `chat MODEL_DIR`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["main"]


def _add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("model_dir", help="folder with config.json, *.safetensors and tokenizer.json")
    p.add_argument("--dtype", default=None, help="float32, float16 or bfloat16 (default: stored)")
    p.add_argument("--device", default=None, help="e.g. cpu or cuda:0 (default: pygpukit's)")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--min-p", type=float, default=0.0)
    p.add_argument("--repetition-penalty", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--sample", action="store_true", help="sample even at temperature 1")
    p.add_argument("--stop", action="append", default=[], help="stop string (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no loading progress bar")
    p.add_argument("--no-graph", action="store_true",
                   help="decode op by op (no CUDA graph, host sampling)")  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pygpukit.llm", description="Run a causal language model with pygpukit."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="continue one prompt and print the text")
    _add_model_options(gen)
    gen.add_argument("prompt")
    gen.add_argument("--chat", action="store_true", help="wrap the prompt in the chat template")
    chat = sub.add_parser("chat", help="talk with a chat model (reads stdin; /exit to quit)")
    _add_model_options(chat)
    chat.add_argument("--system", default=None, help="system message")
    chat.add_argument("--no-thinking", action="store_true", help="enable_thinking=False (Qwen3)")
    chat.add_argument("--show-thinking", action="store_true", help="print <think> blocks too")
    return parser


def _generation_options(args: argparse.Namespace) -> dict[str, Any]:
    return dict(
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        min_p=args.min_p,
        repetition_penalty=args.repetition_penalty,
        seed=args.seed,
        do_sample=True if args.sample else None,
        stop_strings=tuple(args.stop),
        use_graph=False if args.no_graph else None,
    )


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    from . import load_model_from_safetensors
    from .tokenizer import Tokenizer

    tokenizer = Tokenizer.from_pretrained(args.model_dir)
    model = load_model_from_safetensors(
        args.model_dir, dtype=args.dtype, device=args.device, progress=not args.quiet
    )
    return model, tokenizer


def _generate(args: argparse.Namespace, out: TextIO) -> int:
    model, tok = _load(args)
    if args.chat:
        text = tok.apply_chat_template([{"role": "user", "content": args.prompt}])
        ids = tok.encode(text, add_special_tokens=False)
    else:
        ids = tok.encode(args.prompt)
    stop = sorted(set(model.config.eos_token_id) | set(tok.eos_token_ids))
    options = _generation_options(args)
    out.write(args.prompt if not args.chat else "")
    for event in model.stream(ids, tokenizer=tok, stop_token_ids=stop, **options):
        out.write(event.text)
        out.flush()
    out.write("\n")
    return 0


def _chat(args: argparse.Namespace, inp: TextIO, out: TextIO) -> int:
    from .chat import ChatSession

    model, tok = _load(args)
    session = ChatSession(model, tok, system=args.system, **_generation_options(args))
    if args.no_thinking:
        session.template_variables["enable_thinking"] = False
    out.write(f"{model}\ntype a message; /exit or end of input quits\n")
    while True:
        out.write("> ")
        out.flush()
        line = inp.readline()
        if not line or line.strip() in ("/exit", "/quit"):
            return 0
        if not line.strip():
            continue
        in_think = False
        for event in session.stream(line.strip()):
            text = event.text
            in_think = in_think or "<think>" in text
            if args.show_thinking or not in_think:
                out.write(text)
                out.flush()
            if "</think>" in text:
                in_think = False
        out.write("\n")


def main(
    argv: Sequence[str] | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None
) -> int:
    args = _parser().parse_args(argv)
    out = stdout or sys.stdout
    try:
        if args.command == "generate":
            return _generate(args, out)
        return _chat(args, stdin or sys.stdin, out)
    except (FileNotFoundError, ValueError, TypeError, IndexError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
