"""Entry point of `python -m pygpukit.benchmark`."""

from .cli import main

raise SystemExit(main())
