"""`python -m pygpukit.audio COMMAND`: audio tools from the shell (transcribe: Whisper)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pygpukit.audio", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    from pygpukit.asr.whisper.cli import add_transcribe_command, run_transcribe

    add_transcribe_command(sub)
    args = parser.parse_args(argv)
    try:
        return run_transcribe(args, stdout)
    except (FileNotFoundError, ValueError, TypeError, IndexError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
