"""Entry point of `python -m pygpukit.llm` (see pygpukit.llm.cli)."""

import sys

from .cli import main

sys.exit(main())
