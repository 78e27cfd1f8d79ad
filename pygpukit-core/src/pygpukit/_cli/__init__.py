"""The command line: argument parsing and the dispatch to one module per subcommand."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from . import demo, doctor, info


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m pygpukit",
        description="PyGPUkit: what is installed, what works, and a quick demo.",
    )
    sub = top.add_subparsers(dest="command", metavar="{info,doctor,demo}")
    for module in (info, doctor, demo):
        module.add_parser(sub)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; the return value is the process exit status."""
    top = parser()
    args = top.parse_args(argv)
    if args.command is None:
        top.print_help()
        return 2
    status: int = args.run(args)
    return status


__all__ = ["main", "parser"]
