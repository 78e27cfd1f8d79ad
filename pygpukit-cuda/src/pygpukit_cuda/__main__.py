"""`python -m pygpukit_cuda [status|precompile]`: what the CUDA backend found; warm the cache."""

from __future__ import annotations

import json
import sys

from . import _loader


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "status":
        print(json.dumps({
            "native": _loader.native_status(),
            "driver": _loader.driver_status(),
            "gpus": _loader.device_count(),
            "nvrtc": _loader.nvrtc_status(),
            "nvrtc_path": _loader.get_nvrtc_path(),
        }, indent=2))  # fmt: skip
        return 0
    if command == "precompile":
        from .precompile import precompile

        print(json.dumps(precompile()))
        return 0
    print(f"unknown command {command!r}; use status or precompile", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
