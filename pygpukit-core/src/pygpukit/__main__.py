"""`python -m pygpukit info|doctor|demo`: what is installed, what works, and a quick demo."""

from ._cli import main

raise SystemExit(main())
